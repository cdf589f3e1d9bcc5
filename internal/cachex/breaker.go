package cachex

import (
	"sync"
	"sync/atomic"
	"time"
)

// breaker stops the cache from paying a Redis timeout on every call while
// Redis is down. After `failures` failed calls in a row it opens: allow
// returns false until `cooldown` has passed, then lets one probe through
// (half-open). The probe's success closes it; its failure opens it again.
// While closed and healthy, allow and success touch only atomics.
type breaker struct {
	failures int32
	cooldown time.Duration
	now      func() time.Time

	opened atomic.Bool  // fast-path view of openUntil != zero
	failed atomic.Int32 // consecutive failures while closed

	mu        sync.Mutex
	openUntil time.Time
	probing   bool // a half-open probe is out
}

func newBreaker(failures int, cooldown time.Duration, now func() time.Time) *breaker {
	return &breaker{failures: int32(failures), cooldown: cooldown, now: now}
}

// allow reports whether a call may go to Redis now.
func (b *breaker) allow() bool {
	if !b.opened.Load() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.opened.Load() {
		return true
	}
	if b.probing || b.now().Before(b.openUntil) {
		return false
	}
	b.probing = true
	return true
}

// success records a call that reached Redis; it closes the breaker.
func (b *breaker) success() {
	if !b.opened.Load() {
		if b.failed.Load() != 0 {
			b.failed.Store(0)
		}
		return
	}
	b.mu.Lock()
	b.failed.Store(0)
	b.opened.Store(false)
	b.openUntil, b.probing = time.Time{}, false
	b.mu.Unlock()
}

// failure records a call that could not reach Redis.
func (b *breaker) failure() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opened.Load() { // a failed probe, or a call from before opening
		b.openUntil, b.probing = b.now().Add(b.cooldown), false
		return
	}
	if b.failed.Add(1) >= b.failures {
		b.openUntil = b.now().Add(b.cooldown)
		b.opened.Store(true)
	}
}

// open reports whether the breaker is open or half-open.
func (b *breaker) open() bool { return b.opened.Load() }
