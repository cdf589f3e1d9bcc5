package lockx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A Lock is a held lock. Its Context ends when the lock is lost (cause
// ErrLost), released (ErrReleased) or the context given to Acquire ends.
type Lock struct {
	l      *Locker
	key    string
	holder string
	token  int64
	nodes  []int // the servers it was acquired on: extensions count only these
	// late holds, for each server whose acquire reply had not arrived when
	// the lock was won, a channel closed when it does (nil: none).
	late map[int]chan struct{}

	acquired time.Time
	ctx      context.Context
	cancel   context.CancelCauseFunc

	ended      atomic.Bool // the context has been ended by lose
	observed   atomic.Bool // lockx_held_seconds has seen this lock
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
	lk.observeHeld()
	lk.lostEvent(cause)
	lk.cancel(cause)
}

// observeHeld records how long the lock was held, once: until it was lost
// or, if it never was, released.
func (lk *Lock) observeHeld() {
	if lk.observed.CompareAndSwap(false, true) {
		lk.l.m.held.Observe(time.Since(lk.acquired).Seconds())
	}
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
	n, quorum := len(lk.nodes), lk.l.quorum
	got, rest := lk.l.round(lk.ctx, lk.nodes, sent.Add(lk.l.opts.Timeout), true, func(ctx context.Context, n node) (int64, error) {
		return n.run(ctx, lk.l.scripts.extend, []string{lk.key}, lk.holder, lk.l.opts.TTL.Milliseconds())
	}, func(got []reply, pending int) bool {
		extended, gone := tallyExtensions(got)
		return extended >= quorum || gone > n-quorum || extended+pending < quorum
	})
	rest.then(lk.l, nil)
	extended, gone := tallyExtensions(got)
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
	case gone > n-quorum:
		lk.l.m.extLost.Inc()
		lk.lose(fmt.Errorf("%w: an extension found it gone on %d of %d servers", ErrLost, gone, n))
	case lk.ctx.Err() == nil:
		lk.l.m.extError.Inc()
		lk.tick.Reset(every / 2) // try again sooner; the loss timer is the deadline
	}
}

// tallyExtensions counts the servers that extended the lock and those that
// answered that it is gone.
func tallyExtensions(got []reply) (extended, gone int) {
	for _, r := range got {
		switch {
		case r.err != nil:
		case r.val == 1:
			extended++
		default:
			gone++
		}
	}
	return extended, gone
}

// Release stops the watchdog and deletes the lock wherever it is still this
// holder's, waking the waiters. It takes no context: it always runs, bounded
// by Timeout, and returns once a quorum answered; no extension runs after
// it. Where the acquire script's reply had not come in when the lock was
// won, the delete waits for it in the background, so that it cannot
// overtake the script. It returns ErrLost if the lock had been lost, an error if fewer than a
// quorum confirmed (the lock then expires by its TTL), else nil; a second
// call returns nil.
func (lk *Lock) Release() error {
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
	lk.observeHeld()
	l := lk.l
	ctx := context.WithoutCancel(lk.ctx)
	now := l.all
	if lk.late != nil {
		now = nil
		for _, i := range l.all {
			arrived, ok := lk.late[i]
			if !ok || closed(arrived) {
				now = append(now, i)
				continue
			}
			// The acquire script may still run there: delete the lock
			// after it has answered (at most Timeout after it was sent).
			l.background(func() {
				<-arrived
				_, _ = l.releaseOn(ctx, lk.key, lk.holder, i)
			})
		}
	}
	got, rest := l.round(ctx, now, time.Now().Add(l.opts.Timeout), false, l.releaseCall(lk.key, lk.holder),
		func(got []reply, pending int) bool {
			n := answered(got)
			return n >= l.quorum || n+pending < l.quorum
		})
	rest.then(l, nil)
	if errors.Is(lostErr, ErrLost) {
		return lostErr
	}
	if _, failed := count(got); len(got)-failed < l.quorum {
		return fmt.Errorf("lockx: release %s: too few servers answered: %w", lk.key, replyErrors(got))
	}
	return nil
}

// awaited returns, for the servers still to answer an acquisition that won
// (rest, in that order), channels closed when they have answered, and
// drains their replies in the background.
func awaited(l *Locker, pending []int, rest late) map[int]chan struct{} {
	if rest.n == 0 {
		return nil
	}
	arrived := make(map[int]chan struct{}, len(pending))
	for _, i := range pending {
		arrived[i] = make(chan struct{})
	}
	rest.then(l, func(r reply) { close(arrived[r.node]) })
	return arrived
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
	relErr := lk.Release()
	if errors.Is(relErr, ErrLost) {
		return errors.Join(fnErr, relErr)
	}
	if fnErr != nil {
		return fnErr
	}
	return relErr
}
