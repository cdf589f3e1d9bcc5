package loadgen

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeClock is a virtual clock: time moves only when the test releases a
// waiter. Combined with synctest.Wait (which returns once every other
// goroutine of the bubble is blocked) it makes runs fully deterministic:
// waiters are released one at a time, earliest deadline first and, among
// equal deadlines, in the order they started waiting.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     int
	waiters []*fakeWaiter
}

type fakeWaiter struct {
	at  time.Time
	seq int
	ch  chan struct{}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return ctx.Err()
	}
	w := &fakeWaiter{at: t, seq: c.seq, ch: make(chan struct{})}
	c.seq++
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.waiters = slices.DeleteFunc(c.waiters, func(x *fakeWaiter) bool { return x == w })
		c.mu.Unlock()
		return ctx.Err()
	}
}

// sleep is a helper for request functions: wait d of virtual time.
func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	return c.SleepUntil(ctx, c.Now().Add(d))
}

// releaseNext moves time to the earliest deadline and wakes exactly one
// waiter. It reports false when nobody waits.
func (c *fakeClock) releaseNext() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiters) == 0 {
		return false
	}
	i := 0
	for j, w := range c.waiters {
		if w.at.Before(c.waiters[i].at) || (w.at.Equal(c.waiters[i].at) && w.seq < c.waiters[i].seq) {
			i = j
		}
	}
	w := c.waiters[i]
	c.waiters = slices.Delete(c.waiters, i, i+1)
	if w.at.After(c.now) {
		c.now = w.at
	}
	close(w.ch)
	return true
}

// advanceTo jumps time to t and wakes every waiter due by then at once, as a
// late-waking OS timer would.
func (c *fakeClock) advanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.waiters = slices.DeleteFunc(c.waiters, func(w *fakeWaiter) bool {
		if w.at.After(t) {
			return false
		}
		close(w.ch)
		return true
	})
}

// drive releases waiters one at a time until done is closed. It must run in
// the synctest bubble's root goroutine.
func (c *fakeClock) drive(t *testing.T, done <-chan struct{}) {
	t.Helper()
	for {
		synctest.Wait()
		select {
		case <-done:
			return
		default:
		}
		if !c.releaseNext() {
			t.Fatal("deadlock: nothing waits on the clock and the run has not finished")
		}
	}
}
