package lockx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Acquire takes the lock on resource, retrying with jittered backoff (woken
// early by the holder's release) until it holds it, Options.Wait is spent
// (ErrNotAcquired; ErrUnavailable when the last attempt reached too few
// servers) or ctx ends (ctx.Err()); it returns at most Timeout after Wait.
// The Lock is held (a quorum confirmed it is set to this caller), carries a
// fencing token larger than any earlier holder's, and a context, a child of
// ctx, that ends with cause ErrLost as soon as the lock is lost or can no
// longer be proven held. Release it when done.
func (l *Locker) Acquire(ctx context.Context, resource string) (*Lock, error) {
	return l.acquire(ctx, resource, false)
}

// TryAcquire makes one attempt to take the lock on resource and returns at
// once: the Lock, ErrNotAcquired if another holds it, ErrUnavailable if too
// few servers answered, or ctx.Err(). It takes at most Timeout.
func (l *Locker) TryAcquire(ctx context.Context, resource string) (*Lock, error) {
	return l.acquire(ctx, resource, true)
}

// An acquisition is one Acquire call: one holder token for all its
// attempts, so that an attempt whose reply was lost, or that ran late on a
// slow server, is recognised by the next one as its own.
type acquisition struct {
	l        *Locker
	key      string
	holder   string
	deadline time.Time // Wait ends
	tried    time.Time // the last attempt was sent

	// busy[i] is open while a reply or a clean-up of an earlier attempt is
	// outstanding on server i: no attempt goes there meanwhile, so a
	// clean-up can never delete what a later attempt won. Nil until the
	// first clean-up. freed receives (without blocking the sender) when one
	// closes.
	busy  []chan struct{}
	freed chan struct{}
	// handedBelow: hand-over messages with a token up to this one predate
	// this holder's own release of the lock (HandOver), and are ignored.
	handedBelow int64
}

func (l *Locker) acquire(ctx context.Context, resource string, once bool) (lk *Lock, err error) {
	start := time.Now()
	parent, attempts := ctx, 0 // the Lock's context descends from the caller's, not the span's
	if l.tr != nil {
		var span trace.Span
		if ctx, span = l.tr.startAcquire(ctx, resource, once); span != nil {
			defer func() { endAcquire(span, lk, err, attempts, time.Since(start)) }()
		}
	}
	a := &acquisition{
		l:        l,
		key:      l.lockKey(resource),
		holder:   newHolder(),
		deadline: start.Add(l.opts.Wait),
	}
	if once {
		a.deadline = start
	}
	pause := l.opts.RetryMin
	var wake *registration
	for a.ready(ctx) {
		l.m.attempts.Inc()
		attempts++
		if lk, err = a.attempt(ctx); lk != nil {
			return l.acquired(parent, start, lk), nil
		}
		if ctx.Err() != nil || !time.Now().Before(a.deadline) {
			break
		}
		if wake == nil {
			// Listen for the holder's release, then try once more at once:
			// it may have released before the subscription was in place.
			wake = l.waker.wait(channel(a.key), a.holder)
			defer wake.stop()
			continue
		}
		if lk := a.pause(ctx, wake, pause); lk != nil {
			return l.acquired(parent, start, lk), nil
		}
		pause = min(2*pause, l.opts.RetryMax)
	}
	a.leave()
	return nil, l.failure(ctx, start, resource, once, err)
}

// pause waits a jittered pause before the next attempt, or until the
// holder's release wakes the waiter. Under HandOver the release may hand
// the lock to this waiter: pause then returns it.
func (a *acquisition) pause(ctx context.Context, wake *registration, pause time.Duration) *Lock {
	jittered := pause/2 + rand.N(pause/2+1)
	t := time.NewTimer(min(jittered, time.Until(a.deadline)))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case token := <-wake.c:
		if token > a.handedBelow {
			return a.l.handedOver(ctx, a.key, a.holder, token, a.tried)
		}
	case <-t.C:
	}
	return nil
}

// failure counts an acquisition that ended without a lock and returns its
// error: the caller's, ErrUnavailable, or ErrNotAcquired.
func (l *Locker) failure(ctx context.Context, start time.Time, resource string, once bool, err error) error {
	switch {
	case ctx.Err() != nil:
		l.giveUp(ctx, start, l.m.failed)
		return ctx.Err()
	case errors.Is(err, ErrUnavailable):
		l.giveUp(ctx, start, l.m.failed)
		return fmt.Errorf("%w (resource %s)", err, resource)
	case once:
		l.giveUp(ctx, start, l.m.timeout)
		return fmt.Errorf("%w: %s at the one attempt", ErrNotAcquired, resource)
	default:
		l.giveUp(ctx, start, l.m.timeout)
		return fmt.Errorf("%w: %s within %v", ErrNotAcquired, resource, l.opts.Wait)
	}
}

// ready waits until a quorum of servers have nothing outstanding from an
// earlier attempt. It reports false if ctx or the wait budget ends first.
func (a *acquisition) ready(ctx context.Context) bool {
	for len(a.idle()) < a.l.quorum {
		t := time.NewTimer(time.Until(a.deadline))
		select {
		case <-a.freed: // one is free: count again
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
			return false
		}
	}
	return ctx.Err() == nil
}

// idle returns the servers that have nothing outstanding.
func (a *acquisition) idle() []int {
	if a.busy == nil {
		return a.l.all
	}
	idle := make([]int, 0, len(a.busy))
	for i, b := range a.busy {
		if b == nil || closed(b) {
			idle = append(idle, i)
		}
	}
	return idle
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// attempt makes one attempt on the idle servers at once, bounded by Timeout
// in all, and decides as soon as the replies so far settle it. It returns a
// held Lock; or nil and, when too few servers answered, an error wrapping
// ErrUnavailable. A failed attempt deletes the lock wherever it may have
// set it. With HandOver, a failed attempt that found the lock held queues
// the holder until the wait budget ends.
func (a *acquisition) attempt(ctx context.Context) (*Lock, error) {
	l := a.l
	idle := a.idle()
	a.tried = time.Now()
	deadline := a.tried.Add(l.opts.Timeout)
	ttl, queue := l.opts.TTL.Milliseconds(), time.Until(a.deadline)
	got, rest := l.round(ctx, idle, deadline, true, func(ctx context.Context, n node) (int64, error) {
		if l.opts.HandOver && queue > 0 {
			return n.run(ctx, l.scripts.queuedAcquire, queueKeys(a.key), a.holder, ttl, max(queue.Milliseconds(), 1), fenceExpiry(l.opts.TTL))
		}
		return n.run(ctx, l.scripts.acquire, []string{a.key, fenceKey(a.key)}, a.holder, ttl, fenceExpiry(l.opts.TTL))
	}, func(got []reply, pending int) bool {
		won, _ := count(got)
		return won >= l.quorum || won+pending < l.quorum
	})
	won, failed := count(got)
	if won >= l.quorum {
		token, fenced := l.fence(ctx, a.key, got, deadline)
		validUntil := a.tried.Add(l.opts.TTL - drift(l.opts.TTL))
		if fenced && time.Until(validUntil) > l.opts.SafetyMargin {
			lk := &Lock{l: l, key: a.key, holder: a.holder, token: token, validUntil: validUntil, nodes: idle}
			lk.late = awaited(l, pending(idle, got), rest) // late wins are part of the lock: Release deletes them
			return lk, nil
		}
	}
	a.cleanUp(ctx, idle, got, rest)
	if unanswered := failed + len(l.nodes) - len(idle); unanswered > len(l.nodes)-l.quorum {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, replyErrors(got))
	}
	return nil, nil
}

// cleanUp deletes the lock of a failed attempt wherever it may have been
// set. On the servers that granted it, it does so now (in the background
// once the wait budget is spent); on those that failed, in the background,
// so that a server that did not answer is not waited for (with one server
// there is nothing else to try, and a hand-over must know what the clean-up
// found: it is cleaned up now); on those still to answer, when they do.
// Until then those servers are busy. idle are the servers the attempt went
// to.
func (a *acquisition) cleanUp(ctx context.Context, idle []int, got []reply, rest late) {
	l := a.l
	if a.busy == nil {
		a.busy = make([]chan struct{}, len(l.nodes))
		a.freed = make(chan struct{}, 1)
	}
	var now, later []int
	for _, r := range got {
		switch {
		case r.err == nil && r.val > 0, r.err != nil && len(l.nodes) == 1:
			now = append(now, r.node)
		case r.err != nil:
			later = append(later, r.node)
		}
	}
	if !time.Now().Before(a.deadline) {
		now, later = nil, append(later, now...)
	}
	if len(now) > 0 {
		a.releaseNow(ctx, now)
	}
	for _, i := range later {
		free := a.occupy(i)
		l.background(func() {
			defer free()
			_, _ = l.releaseOn(ctx, a.key, a.holder, i)
		})
	}
	if rest.n == 0 {
		return
	}
	frees := map[int]func(){}
	for _, i := range pending(idle, got) {
		frees[i] = a.occupy(i)
	}
	rest.then(l, func(r reply) {
		if r.val > 0 || r.err != nil { // it may hold the lock
			_, _ = l.releaseOn(ctx, a.key, a.holder, r.node)
		}
		frees[r.node]()
	})
}

// occupy marks server i busy until the returned func is called.
func (a *acquisition) occupy(i int) (free func()) {
	done := make(chan struct{})
	a.busy[i] = done
	return func() {
		close(done)
		select {
		case a.freed <- struct{}{}:
		default:
		}
	}
}

// pending returns the servers of idx that have no reply in got.
func pending(idx []int, got []reply) []int {
	var out []int
	for _, i := range idx {
		if !slices.ContainsFunc(got, func(r reply) bool { return r.node == i }) {
			out = append(out, i)
		}
	}
	return out
}

// acquired counts a successful Acquire and starts the lock's timers.
func (l *Locker) acquired(ctx context.Context, start time.Time, lk *Lock) *Lock {
	l.m.acquired.Inc()
	observe(ctx, l.m.wait, time.Since(start).Seconds())
	lk.start(ctx)
	return lk
}

func (l *Locker) giveUp(ctx context.Context, start time.Time, result interface{ Inc() }) {
	result.Inc()
	observe(ctx, l.m.wait, time.Since(start).Seconds())
}

// count returns how many replies won (a token) and how many failed.
func count(got []reply) (won, failed int) {
	for _, r := range got {
		switch {
		case r.err != nil:
			failed++
		case r.val > 0:
			won++
		}
	}
	return won, failed
}

// fence returns the token for a quorum just won (got) and whether it is
// safe: larger than any later holder's could be smaller than. It takes the
// largest token the quorum issued, raises the counters of the servers that
// issued a smaller one, and succeeds when a quorum of servers have a
// counter of at least that token. Any two quorums share a server, so the
// next holder's token there, and so its largest, is larger.
func (l *Locker) fence(ctx context.Context, key string, got []reply, deadline time.Time) (int64, bool) {
	var token int64
	for _, r := range got {
		token = max(token, r.val)
	}
	if len(l.nodes) == 1 {
		return token, true
	}
	atLeast := 0
	var lower []int
	for _, r := range got {
		switch {
		case r.val == token:
			atLeast++
		case r.val > 0:
			lower = append(lower, r.node)
		}
	}
	if atLeast >= l.quorum {
		return token, true
	}
	if len(lower) == 0 {
		return token, false
	}
	raised, rest := l.round(ctx, lower, deadline, false, func(ctx context.Context, n node) (int64, error) {
		return n.run(ctx, l.scripts.raise, []string{fenceKey(key)}, token, fenceExpiry(l.opts.TTL))
	}, func(got []reply, pending int) bool {
		ok := atLeast + raisedTo(got, token)
		return ok >= l.quorum || ok+pending < l.quorum
	})
	rest.then(l, nil)
	return token, atLeast+raisedTo(raised, token) >= l.quorum
}

// raisedTo counts the replies whose counter reached token.
func raisedTo(got []reply, token int64) int {
	n := 0
	for _, r := range got {
		if r.err == nil && r.val >= token {
			n++
		}
	}
	return n
}
