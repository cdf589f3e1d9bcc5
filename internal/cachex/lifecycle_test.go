package cachex

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

type tenantKey struct{}

// An early refresh runs with the values of the read that triggered it (a
// tenant, credentials, a trace), as a miss does, not with an empty context.
func TestEarlyRefreshKeepsTheReadersContextValues(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	clk := newClock()
	for _, batch := range []bool{false, true} {
		c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "values", Prefix: "values-" + map[bool]string{false: "get", true: "many"}[batch] + ":",
			TTL: time.Hour, now: clk.Now, noClockSync: true})
		var seen sync.Map // reason -> tenant the loader saw
		load := func(reason string) func(ctx context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				seen.Store(reason, ctx.Value(tenantKey{}))
				time.Sleep(time.Millisecond) // delta > 0: early refresh can happen
				return "v", nil
			}
		}
		read := func(ctx context.Context, reason string) {
			t.Helper()
			var err error
			if batch {
				_, err = c.GetMany(ctx, []string{"k"}, func(ctx context.Context, keys []string) (map[string]string, error) {
					v, err := load(reason)(ctx)
					return map[string]string{"k": v}, err
				})
			} else {
				_, err = c.Get(ctx, "k", load(reason))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.WithValue(context.Background(), tenantKey{}, "tenant-7")
		read(ctx, "miss")
		clk.Add(time.Hour - time.Millisecond)
		mustSetBeta(t, c, 1e9) // refresh early, for any delta above 0
		read(ctx, "early")
		waitFor(t, "the early refresh", func() bool { _, ok := seen.Load("early"); return ok })
		for _, reason := range []string{"miss", "early"} {
			if v, _ := seen.Load(reason); v != "tenant-7" {
				t.Errorf("batch %v: the %s load saw tenant %v, want tenant-7", batch, reason, v)
			}
		}
		clk.Add(2 * time.Hour)
	}
}

// Close while reads run: reads that start after it return ErrClosed,
// nothing races (go test -race), and the key locks of the recomputes it
// cancelled are released.
func TestCloseWhileReading(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "closing", Prefix: "closing:", TTL: 50 * time.Millisecond})
	var calls atomic.Int64
	load := func(ctx context.Context) (string, error) {
		calls.Add(1)
		select {
		case <-time.After(5 * time.Millisecond):
			return "v", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	loadMany := func(ctx context.Context, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			v, err := load(ctx)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	var stop atomic.Bool
	var closedSeen atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				key := itoa(int64(i%20 + 1))
				var err error
				if g%2 == 0 {
					_, err = c.Get(context.Background(), key, load)
				} else {
					_, err = c.GetMany(context.Background(), []string{key, "x" + key}, loadMany)
				}
				if errors.Is(err, ErrClosed) {
					closedSeen.Add(1)
				}
			}
		})
	}
	waitFor(t, "reads, misses and refreshes under way", func() bool { return calls.Load() >= 40 && gets(c, resultHit) > 0 })
	c.Close()
	waitFor(t, "reads refused after Close", func() bool { return closedSeen.Load() > 0 })
	stop.Store(true)
	wg.Wait()
	if _, err := c.Get(context.Background(), "k", load); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	noLocks(t, rdb, "closing:")
}
