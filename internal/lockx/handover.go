package lockx

import (
	"context"
	"math"
	"time"
)

// The hand-over path of Acquire (Options.HandOver): a waiter woken by a
// release may find the lock handed to it, and one that gives up leaves the
// queue. acquire.go's loop reaches them through pause (a wake-up that
// carries a hand-over), cleanUp (releaseNow) and its end (leave).

// releaseNow releases what this attempt set on the servers now, within
// Timeout. Under HandOver a release reports the last token handed over, so
// a hand-over message up to it is stale for this waiter.
func (a *acquisition) releaseNow(ctx context.Context, now []int) {
	l := a.l
	released, _ := l.round(context.WithoutCancel(ctx), now, time.Now().Add(l.opts.Timeout), false, l.releaseCall(a.key, a.holder),
		func([]reply, int) bool { return false })
	for _, r := range released {
		if r.err != nil {
			// Unknown whether a lock handed to us was passed on: trust
			// no hand-over message from now on (attempts still see it).
			a.handedBelow = math.MaxInt64
		} else {
			a.handedBelow = max(a.handedBelow, r.val)
		}
	}
}

// leave takes a waiter that gives up off the HandOver queue, passing the
// lock on if it was handed to it meanwhile. It runs in the background: the
// waiter is not kept waiting for it.
func (a *acquisition) leave() {
	if a.l.opts.HandOver {
		a.l.background(func() { _, _ = a.l.releaseOn(context.Background(), a.key, a.holder, 0) })
	}
}

// handedOver returns the lock a release handed to holder (HandOver), or nil
// if it cannot be proven held. The message is the server's word that the
// lock was set to holder; messages from before the holder's own release of
// it were filtered out by the caller. The hand-over set the lock's TTL
// after the waiter's last failed attempt was sent (tried), so validity
// counts from then; when that leaves too little for the watchdog's first
// extension, the lock is extended once before it is returned.
func (l *Locker) handedOver(ctx context.Context, key, holder string, token int64, tried time.Time) *Lock {
	valid := func(from time.Time) time.Time { return from.Add(l.opts.TTL - drift(l.opts.TTL)) }
	lk := &Lock{l: l, key: key, holder: holder, token: token, validUntil: valid(tried), nodes: l.all}
	if time.Until(lk.validUntil)-l.opts.SafetyMargin > l.opts.TTL/3+l.opts.Timeout {
		return lk
	}
	sent := time.Now()
	ok, err := l.call(ctx, 0, func(ctx context.Context, n node) (int64, error) {
		return n.run(ctx, l.scripts.extend, []string{key}, holder, l.opts.TTL.Milliseconds())
	})
	if err != nil || ok != 1 {
		return nil // gone, or unknown: the caller's next attempt (or leave) settles it
	}
	lk.validUntil = valid(sent)
	return lk
}
