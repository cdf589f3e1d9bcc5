package lockx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Lock is a held lock. Its Context ends when the lock is lost (cause
// ErrLost), released (ErrReleased) or the context given to Acquire ends.
type Lock struct {
	l      *Locker
	key    string
	holder string
	token  int64

	acquired time.Time
	ctx      context.Context
	cancel   context.CancelCauseFunc

	ended      atomic.Bool // the context has been ended by lose
	mu         sync.Mutex
	validUntil time.Time   // proven validity (monotonic), minus drift
	loss       *time.Timer // fires SafetyMargin before validUntil
	released   bool

	// The watchdog is a timer whose callback extends and re-arms it: no
	// goroutine lives between extensions. wd serialises an extension with
	// Release.
	wd      sync.Mutex
	tick    *time.Timer
	stopped bool
}

// start arms the loss timer and the watchdog.
func (lk *Lock) start(parent context.Context) {
	lk.acquired = time.Now()
	lk.ctx, lk.cancel = context.WithCancelCause(parent)
	lk.mu.Lock()
	lk.loss = time.AfterFunc(lk.untilLoss(), func() {
		lk.lose(fmt.Errorf("%w: validity ran out without an extension", ErrLost))
	})
	lk.mu.Unlock()
	if !lk.l.opts.NoWatchdog {
		lk.wd.Lock()
		lk.tick = time.AfterFunc(lk.l.opts.TTL/3, lk.extend)
		lk.wd.Unlock()
	}
}

// untilLoss is how long until the holder must be told the lock is lost.
// Called with lk.mu held.
func (lk *Lock) untilLoss() time.Duration {
	return time.Until(lk.validUntil) - lk.l.opts.SafetyMargin
}

// Token is the lock's fencing token: larger than the token of every earlier
// holder of the resource. Pass it with every write the lock protects, and let
// the storage reject writes with an older token (see package pgfence).
func (lk *Lock) Token() int64 { return lk.token }

// Context ends when the lock is lost or can no longer be proven held
// (context.Cause is ErrLost), when it is released (ErrReleased), or when the
// context given to Acquire ends. Do the protected work under it.
func (lk *Lock) Context() context.Context { return lk.ctx }

// lose ends the holder's context with cause, once. The loss is counted
// before the context ends, so whoever sees the context end also sees
// lockx_lost_total include it.
func (lk *Lock) lose(cause error) {
	if lk.ctx.Err() != nil || !lk.ended.CompareAndSwap(false, true) {
		return
	}
	lk.l.m.lost.Inc()
	lk.cancel(cause)
}

// extend is one watchdog tick, run by the timer every TTL/3 on all nodes. A
// quorum of extensions moves the validity forward; a quorum that can no
// longer be reached (the lock is gone on too many nodes) loses the lock at
// once; failures leave the loss timer to end it.
func (lk *Lock) extend() {
	lk.wd.Lock()
	defer lk.wd.Unlock()
	if lk.stopped || lk.ctx.Err() != nil {
		return
	}
	every := lk.l.opts.TTL / 3
	sent := time.Now()
	results, errs := lk.l.each(lk.ctx, func(ctx context.Context, n redis.UniversalClient) (int64, error) {
		return lk.l.scripts.extend.Run(ctx, n, []string{lk.key}, lk.holder, lk.l.opts.TTL.Milliseconds()).Int64()
	})
	extended, gone := 0, 0
	for i, r := range results {
		switch {
		case errs[i] != nil:
		case r == 1:
			extended++
		default:
			gone++
		}
	}
	switch {
	case extended >= lk.l.quorum:
		lk.l.m.extOK.Inc()
		lk.mu.Lock()
		lk.validUntil = sent.Add(lk.l.opts.TTL - drift(lk.l.opts.TTL))
		if lk.loss.Stop() { // not fired: move it
			lk.loss.Reset(lk.untilLoss())
		}
		lk.mu.Unlock()
		lk.tick.Reset(every)
	case gone > len(lk.l.nodes)-lk.l.quorum:
		lk.l.m.extLost.Inc()
		lk.lose(fmt.Errorf("%w: an extension found it gone on %d of %d servers", ErrLost, gone, len(lk.l.nodes)))
	case lk.ctx.Err() == nil:
		lk.l.m.extError.Inc()
		lk.tick.Reset(every / 2) // try again sooner; the loss timer is the deadline
	}
}

// Release stops the watchdog and deletes the lock on every server that
// still holds it for this holder, waking the waiters. It is bounded by the
// Locker's Timeout and runs even if ctx has ended. It returns ErrLost if
// the lock was lost before (work done under it may have overlapped with
// another holder's), an error if no server could be reached, else nil. No
// extension runs after Release returns.
func (lk *Lock) Release(ctx context.Context) error {
	lk.mu.Lock()
	if lk.released {
		lk.mu.Unlock()
		return nil
	}
	lk.released = true
	lk.loss.Stop()
	lk.mu.Unlock()
	lk.wd.Lock() // waits for an extension in progress
	lk.stopped = true
	if lk.tick != nil {
		lk.tick.Stop()
	}
	lk.wd.Unlock()

	lostErr := context.Cause(lk.ctx)
	lk.cancel(ErrReleased)
	lk.l.m.held.Observe(time.Since(lk.acquired).Seconds())
	_, errs := lk.l.releaseAll(lk.key, lk.holder)
	if errors.Is(lostErr, ErrLost) {
		return lostErr
	}
	reached := 0
	for _, err := range errs {
		if err == nil {
			reached++
		}
	}
	if reached == 0 {
		return fmt.Errorf("lockx: release %s: %w", lk.key, errors.Join(errs...))
	}
	return nil
}

// Do acquires the lock on resource, runs fn with the lock's context and
// fencing token, and releases the lock. It returns fn's error; if the lock
// was lost while fn ran, the loss (ErrLost) as well.
func (l *Locker) Do(ctx context.Context, resource string, fn func(ctx context.Context, token int64) error) error {
	lk, err := l.Acquire(ctx, resource)
	if err != nil {
		return err
	}
	fnErr := fn(lk.Context(), lk.Token())
	relErr := lk.Release(ctx)
	if errors.Is(relErr, ErrLost) {
		return errors.Join(fnErr, relErr)
	}
	if fnErr != nil {
		return fnErr
	}
	return relErr
}
