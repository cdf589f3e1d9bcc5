package cachex

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// panicky loaders count their calls, then panic.
type panicky struct{ calls atomic.Int64 }

func (p *panicky) load(context.Context) (string, error) {
	p.calls.Add(1)
	time.Sleep(20 * time.Millisecond) // long enough for concurrent readers to join the flight
	panic("loader boom")
}

func (p *panicky) loadMany(context.Context, []string) (map[string]string, error) {
	p.calls.Add(1)
	panic("loader boom")
}

// checkPanic fails unless err is the loader's recovered panic, with its
// value and stack.
func checkPanic(t *testing.T, err error) {
	t.Helper()
	var p *LoaderPanic
	if !errors.Is(err, ErrLoaderPanic) || !errors.As(err, &p) {
		t.Fatalf("err = %v, want a LoaderPanic (errors.Is ErrLoaderPanic)", err)
	}
	if p.Value != "loader boom" || !bytes.Contains(p.Stack, []byte("panicky")) {
		t.Fatalf("panic value %v, stack without the loader's frame: want the loader's", p.Value)
	}
}

// noLocks fails if any key lock of the cache is left in Redis.
func noLocks(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	waitFor(t, "the key locks to be released", func() bool {
		keys, _ := rdb.Keys(context.Background(), "{"+prefix+"*:lock").Result()
		return len(keys) == 0
	})
}

// A loader's panic is recovered where the load runs, on every path: every
// waiter gets an error wrapping it, the key's lock is released, and it is
// counted and logged once.
func TestLoaderPanicIsRecoveredOnEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	rdb := client(t, node)
	for name, run := range map[string]func(t *testing.T, c *Cache[string], clk *clock, p *panicky) (reason string){
		"miss": func(t *testing.T, c *Cache[string], _ *clock, p *panicky) string {
			var wg sync.WaitGroup
			for range 5 { // five waiters of one flight
				wg.Go(func() {
					_, err := c.Get(ctx, "k", p.load)
					checkPanic(t, err)
				})
			}
			wg.Wait()
			return reasonMiss
		},
		"ttl": func(t *testing.T, c *Cache[string], _ *clock, p *panicky) string {
			_ = c.SetStrategy(TTL)
			_, err := c.Get(ctx, "k", p.load)
			checkPanic(t, err)
			return reasonMiss
		},
		"none": func(t *testing.T, c *Cache[string], _ *clock, p *panicky) string {
			_ = c.SetStrategy(None)
			_, err := c.Get(ctx, "k", p.load)
			checkPanic(t, err)
			return reasonMiss
		},
		"batch": func(t *testing.T, c *Cache[string], _ *clock, p *panicky) string {
			_, err := c.GetMany(ctx, []string{"a", "b"}, p.loadMany)
			checkPanic(t, err)
			return reasonMiss
		},
		"bypass": func(t *testing.T, c *Cache[string], _ *clock, p *panicky) string {
			for range 3 { // open the breaker: every call bypasses Redis
				c.brk.failure()
			}
			_, err := c.Get(ctx, "k", p.load)
			checkPanic(t, err)
			return reasonBypass
		},
		"early refresh": func(t *testing.T, c *Cache[string], clk *clock, p *panicky) string {
			if _, err := c.Get(ctx, "k", (&loader{delay: time.Millisecond}).load); err != nil { // delta > 0: early refresh can happen
				t.Fatal(err)
			}
			clk.Add(time.Hour - time.Millisecond) // due: the read refreshes in the background
			mustSetBeta(t, c, 1e9)
			if v, err := c.Get(ctx, "k", p.load); err != nil || v != "v1" {
				t.Fatalf("read that started the refresh: %q, %v; want v1 served", v, err)
			}
			waitFor(t, "the refresh", func() bool { return recomputes(c, reasonEarly, "panic") == 1 })
			return reasonEarly
		},
		"batch early refresh": func(t *testing.T, c *Cache[string], clk *clock, p *panicky) string {
			if _, err := c.GetMany(ctx, []string{"a"}, func(context.Context, []string) (map[string]string, error) {
				time.Sleep(time.Millisecond) // delta > 0: early refresh can happen
				return map[string]string{"a": "v1"}, nil
			}); err != nil {
				t.Fatal(err)
			}
			clk.Add(time.Hour - time.Millisecond)
			mustSetBeta(t, c, 1e9)
			if got, err := c.GetMany(ctx, []string{"a"}, p.loadMany); err != nil || got["a"] != "v1" {
				t.Fatalf("read that started the refresh: %v, %v; want v1 served", got, err)
			}
			waitFor(t, "the refresh", func() bool { return recomputes(c, reasonEarly, "panic") == 1 })
			return reasonEarly
		},
	} {
		t.Run(name, func(t *testing.T) {
			var log syncBuffer
			clk := newClock()
			prefix := "panic-" + strings.ReplaceAll(name, " ", "-") + ":"
			c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "panic", Prefix: prefix, TTL: time.Hour, BreakerFailures: 3,
				BreakerCooldown: time.Hour, now: clk.Now, noClockSync: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			p := &panicky{}
			reason := run(t, c, clk, p)
			if n := recomputes(c, reason, "panic"); n < 1 {
				t.Fatalf("cachex_recomputes_total{reason=%q,status=\"panic\"} = %d, want it counted", reason, n)
			}
			if n, calls := log.count("loader panicked"), int(p.calls.Load()); n != calls || calls == 0 {
				t.Fatalf("logged %d times for %d panics, want once each", n, calls)
			}
			noLocks(t, rdb, prefix)
		})
	}
}
