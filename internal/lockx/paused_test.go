package lockx

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// A paused (not dead) server 0 of 3 stalls neither the waiter nor the
// wake-up subscription it needs: Acquire of a held lock gives up when Wait
// ends, give or take one attempt.
func TestPausedFirstServerDoesNotStallAWaiter(t *testing.T) {
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 3)
	const wait, timeout = 300 * time.Millisecond, 100 * time.Millisecond
	opts := Options{Name: "paused", TTL: 2 * time.Second, Wait: wait, Timeout: timeout}
	holder, _ := newLocker(t, clients(t, nodes...), opts)
	held, err := holder.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	nodes[0].Pause()
	defer nodes[0].Resume()
	waiter, _ := newLocker(t, clients(t, nodes...), opts) // its wake-ups come from server 0
	for i := range 3 {
		within(t, "Acquire of a held lock with server 0 paused", wait+2*timeout, func() {
			if _, err := waiter.Acquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("Acquire %d: %v, want ErrNotAcquired", i, err)
			}
		})
	}
}

// With one of three servers paused, an uncontended acquire and release
// cost what the two others answer in, not the paused one's Timeout, and
// contended acquisitions still succeed within Wait.
func TestPausedMinorityCostsNoTimeout(t *testing.T) {
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 3)
	const timeout = 100 * time.Millisecond
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "paused", TTL: 2 * time.Second, Wait: 2 * time.Second, Timeout: timeout})
	for _, paused := range []int{0, 2} {
		nodes[paused].Pause()
		var took []time.Duration
		for i := range 100 {
			start := time.Now()
			lk, err := l.Acquire(ctx, "free")
			if err != nil {
				t.Fatalf("server %d paused, acquisition %d: %v", paused, i, err)
			}
			if err := lk.Release(); err != nil {
				t.Fatalf("server %d paused, release %d: %v", paused, i, err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		if p99 := took[98]; p99 > timeout+50*time.Millisecond {
			t.Errorf("server %d paused: acquire+release p99 %v, want at most Timeout+50ms (%v)", paused, p99, timeout+50*time.Millisecond)
		}

		// 200 acquisitions of 3 resources by 8 goroutines.
		var acquired, tries atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 25 {
					tries.Add(1)
					lk, err := l.Acquire(ctx, []string{"a", "b", "c"}[(g+i)%3])
					if err != nil {
						continue
					}
					acquired.Add(1)
					time.Sleep(time.Millisecond) // the critical section
					_ = lk.Release()
				}
			})
		}
		wg.Wait()
		if got := acquired.Load(); got*100 < tries.Load()*95 {
			t.Errorf("server %d paused: %d of %d contended acquisitions succeeded within Wait, want at least 95%%", paused, got, tries.Load())
		}
		nodes[paused].Resume()
	}
}
