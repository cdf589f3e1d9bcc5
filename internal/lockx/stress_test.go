package lockx

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// TestMutualExclusionUnderStress: 2 Lockers x 8 goroutines increment a plain
// counter under the lock for a few seconds; the holder of the eleventh
// increment pauses longer than the TTL (the watchdog must keep its lock, and
// everyone else must wait). The count must be exact, and the recorded
// holding intervals must not overlap, in token order. It runs with and
// without HandOver, at once.
func TestMutualExclusionUnderStress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	t.Run("retry", func(t *testing.T) { t.Parallel(); stress(t, false) })
	t.Run("handover", func(t *testing.T) { t.Parallel(); stress(t, true) })
}

func stress(t *testing.T, handOver bool) {
	ctx := context.Background()
	node := redistest.Redis(t)
	const ttl = quickTTL
	lockers := [2]*Locker{}
	for i := range lockers {
		lockers[i], _ = newLocker(t, clients(t, node), Options{Name: "stress", TTL: ttl, Timeout: quickTimeout, Wait: time.Minute, HandOver: handOver})
	}
	type interval struct {
		token              int64
		acquired, released time.Time
	}
	var (
		counter int // deliberately not atomic: the lock is the only guard
		mu      sync.Mutex
		history []interval
		turns   [16]int // acquisitions per goroutine
		wg      sync.WaitGroup
	)
	const pauseAt = 10 // the counter's value when its holder pauses
	deadline := time.Now().Add(2*time.Second + ttl)
	for g := range 16 {
		l := lockers[g%2]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for time.Now().Before(deadline) {
				lk, err := l.Acquire(ctx, "counter")
				if err != nil {
					t.Error(err)
					return
				}
				acquired := time.Now()
				v := counter
				switch r := rng.IntN(100); {
				case v == pauseAt:
					time.Sleep(ttl + 100*time.Millisecond) // a pause longer than the TTL
				case r < 30:
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
				}
				counter = v + 1
				released := time.Now()
				if lk.Context().Err() != nil {
					t.Errorf("lock lost during a pause: %v", context.Cause(lk.Context()))
				}
				if err := lk.Release(); err != nil {
					t.Error(err)
				}
				mu.Lock()
				history = append(history, interval{lk.Token(), acquired, released})
				turns[g]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if counter != len(history) {
		t.Fatalf("counter %d after %d increments: two holders overlapped", counter, len(history))
	}
	if counter <= pauseAt {
		t.Fatalf("%d increments: the holder of increment %d never paused", counter, pauseAt+1)
	}
	slices.SortFunc(history, func(a, b interval) int { return a.acquired.Compare(b.acquired) })
	for i := 1; i < len(history); i++ {
		prev, cur := history[i-1], history[i]
		if cur.acquired.Before(prev.released) {
			t.Fatalf("holding intervals overlap: %+v and %+v", prev, cur)
		}
		if cur.token <= prev.token {
			t.Fatalf("token %d after %d in acquisition order", cur.token, prev.token)
		}
	}
	t.Logf("%d exclusive increments by 16 goroutines on 2 lockers; turns per goroutine %v", len(history), turns)
	// First come, first served: with HandOver every goroutine gets its turn
	// in each round of the queue; without it, whoever retries at the right
	// moment wins, and nothing bounds how often a waiter loses.
	if mean := len(history) / len(turns); handOver && slices.Min(turns[:]) < mean/2 {
		t.Errorf("HandOver: turns per goroutine %v, want each at least half the mean %d", turns, mean)
	}
}
