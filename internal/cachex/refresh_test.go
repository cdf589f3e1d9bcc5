package cachex

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// fixedRand returns r from a settable source.
type fixedRand struct{ bits atomic.Uint64 }

func (f *fixedRand) set(r float64) { f.bits.Store(uint64(r * (1 << 53))) }
func (f *fixedRand) Float64() float64 {
	return float64(f.bits.Load()) / (1 << 53)
}

func TestEarlyRefreshRunsInBackgroundDetachedFromCaller(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	clk, rnd := newClock(), &fixedRand{}
	c, reg := newCache(t, rdb, JSON[string]{}, Options{Name: "early", TTL: 10 * time.Second, now: clk.Now, noClockSync: true, rand: rnd.Float64})
	l := &loader{delay: 20 * time.Millisecond}

	if v, err := c.Get(context.Background(), "k", l.load); err != nil || v != "v1" {
		t.Fatalf("fill: %q, %v", v, err)
	}
	// 10ms before expiry with u = 1 (r = 0): -ln(u) = 0, no early refresh.
	clk.Add(10*time.Second - 10*time.Millisecond)
	if v, _ := c.Get(context.Background(), "k", l.load); v != "v1" || gets(c, resultHit) != 1 {
		t.Fatalf("Get = %q with %d hits; want a plain hit", v, gets(c, resultHit))
	}
	// u = 0.01: -ln(u)*delta ≈ 4.6*20ms >= 10ms: refresh early, serve v1 now.
	rnd.set(0.99)
	mustSetStrategy(t, c, TTL)
	if v, _ := c.Get(context.Background(), "k", l.load); v != "v1" || gets(c, resultHit) != 2 {
		t.Fatalf("ttl: %q with %d hits; want a plain hit", v, gets(c, resultHit))
	}
	mustSetStrategy(t, c, XFetch)
	ctx, cancel := context.WithCancel(context.Background())
	v, err := c.Get(ctx, "k", l.load)
	cancel() // the caller is gone; the refresh must not care
	if err != nil || v != "v1" || gets(c, resultEarlyRefresh) != 1 {
		t.Fatalf("Get = %q, %v with %d early refreshes; want v1 served and a refresh started", v, err, gets(c, resultEarlyRefresh))
	}
	waitFor(t, "the refreshed value in Redis", func() bool {
		e, err := decodeEntry([]byte(rdb.Get(context.Background(), c.redisKey("k")).Val()))
		return err == nil && string(e.payload) == `"v2"`
	})
	rnd.set(0)
	if v, _ := c.Get(context.Background(), "k", l.load); v != "v2" {
		t.Fatalf("after the refresh Get = %q, want v2", v)
	}
	if n := recomputes(c, reasonEarly, "ok"); n != 1 {
		t.Fatalf("%d early recomputes, want 1", n)
	}
	if count, sum := histogram(t, reg, "cachex_refresh_lead_seconds"); count != 1 || sum != 0.010 {
		t.Fatalf("lead histogram: %d samples, sum %vs; want one of 0.010s", count, sum)
	}
}

func TestEarlyRefreshDucksOutWhenAnotherInstanceHoldsTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	clk, rnd := newClock(), &fixedRand{}
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "duck", TTL: 10 * time.Second, now: clk.Now, noClockSync: true, rand: rnd.Float64})
	l := &loader{delay: 20 * time.Millisecond}
	if _, err := c.Get(ctx, "k", l.load); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, lockKey(c.redisKey("k")), "another-instance", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	clk.Add(10*time.Second - 10*time.Millisecond)
	rnd.set(0.99)
	if v, err := c.Get(ctx, "k", l.load); v != "v1" || err != nil {
		t.Fatalf("Get = %q, %v; want the current v1 served", v, err)
	}
	waitFor(t, "the contended refresh to be counted", func() bool {
		return testutil.ToFloat64(c.m.contended) == 1
	})
	c.Close() // waits for background work
	if l.calls.Load() != 1 {
		t.Fatalf("loader called %d times, want only the fill: the other instance is refreshing", l.calls.Load())
	}
}

func TestBackgroundRefreshesAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	clk, rnd := newClock(), &fixedRand{}
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "bounded", TTL: 10 * time.Second, MaxRefreshes: 2, now: clk.Now, noClockSync: true, rand: rnd.Float64})
	fill := &loader{delay: 20 * time.Millisecond}
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		if _, err := c.Get(ctx, k, fill.load); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(10*time.Second - 10*time.Millisecond)
	rnd.set(0.99)
	slow := &loader{release: make(chan struct{})}
	for _, k := range keys {
		if _, err := c.Get(ctx, k, slow.load); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "two refreshes in flight", func() bool { return slow.inFlight.Load() == 2 })
	close(slow.release)
	c.Close()
	if slow.calls.Load() != 2 || slow.maxIn.Load() != 2 {
		t.Fatalf("refresh loads: %d calls, %d at once; want 2 and 2 (MaxRefreshes)", slow.calls.Load(), slow.maxIn.Load())
	}
}

func TestInvalidateDropsTheWriteOfARefreshInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	clk, rnd := newClock(), &fixedRand{}
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "inval", TTL: 10 * time.Second, now: clk.Now, noClockSync: true, rand: rnd.Float64})
	if _, err := c.Get(ctx, "k", (&loader{delay: 20 * time.Millisecond}).load); err != nil {
		t.Fatal(err)
	}
	clk.Add(10*time.Second - 10*time.Millisecond)
	rnd.set(0.99)
	old := &loader{release: make(chan struct{})} // read the source before the write below
	if _, err := c.Get(ctx, "k", old.load); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refresh to start", func() bool { return old.inFlight.Load() == 1 })
	// The source of truth changes; the writer invalidates.
	if err := c.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	close(old.release)
	c.Close()
	if !invalidated(t, rdb, c.redisKey("k")) {
		t.Fatalf("the outdated refresh wrote its value back after Invalidate")
	}
}

// invalidated reports whether rk holds Invalidate's tombstone.
func invalidated(t *testing.T, rdb redis.UniversalClient, rk string) bool {
	t.Helper()
	raw, err := rdb.Get(context.Background(), rk).Result()
	if err != nil {
		return false
	}
	e, err := decodeEntry([]byte(raw))
	return err == nil && e.tombstone
}

func TestInvalidateMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "inval", TTL: time.Minute})
	l := &loader{}
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.Get(ctx, k, l.load); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Invalidate(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if got := invalidated(t, rdb, c.redisKey(k)); got != want {
			t.Errorf("key %s invalidated=%v, want %v", k, got, want)
		}
	}
	if v, _ := c.Get(ctx, "a", l.load); v != "v4" {
		t.Fatalf("Get after Invalidate = %q, want a recomputed v4", v)
	}
}

func TestStaleIfError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	boom := errors.New("database down")

	t.Run("within grace", func(t *testing.T) {
		clk := newClock()
		c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "stale", TTL: time.Second, Grace: time.Hour, now: clk.Now, noClockSync: true})
		if _, err := c.Get(ctx, "k", (&loader{}).load); err != nil {
			t.Fatal(err)
		}
		clk.Add(2 * time.Second) // logically expired, still in Redis
		v, err := c.Get(ctx, "k", (&loader{err: boom}).load)
		if err != nil || v != "v1" {
			t.Fatalf("Get = %q, %v; want the stale v1", v, err)
		}
		if gets(c, resultStale) != 1 || recomputes(c, reasonExpired, "error") != 1 {
			t.Fatalf("stale serves %d, failed expired recomputes %d; want 1 and 1", gets(c, resultStale), recomputes(c, reasonExpired, "error"))
		}
	})
	t.Run("beyond grace", func(t *testing.T) {
		c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "stale2", TTL: 20 * time.Millisecond, Grace: 20 * time.Millisecond})
		if _, err := c.Get(ctx, "k", (&loader{}).load); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "Redis to drop the entry", func() bool { return rdb.Exists(ctx, c.redisKey("k")).Val() == 0 })
		if _, err := c.Get(ctx, "k", (&loader{err: boom}).load); !errors.Is(err, boom) {
			t.Fatalf("Get beyond grace: err = %v, want the loader's error", err)
		}
		if gets(c, resultStale) != 0 {
			t.Fatal("served stale beyond grace")
		}
	})
}

func TestNegativeCaching(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	notFound := func(n *atomic.Int64) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			n.Add(1)
			return "", errors.Join(ErrNotFound, errors.New("product 7 does not exist"))
		}
	}
	t.Run("opt-in", func(t *testing.T) {
		c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "neg", TTL: time.Hour, NegativeTTL: time.Minute})
		var n atomic.Int64
		for range 3 {
			if _, err := c.Get(ctx, "k", notFound(&n)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
		}
		if n.Load() != 1 {
			t.Fatalf("loader called %d times, want 1 (the answer is cached)", n.Load())
		}
		pttl := rdb.PTTL(ctx, c.redisKey("k")).Val()
		if pttl <= 0 || pttl > time.Minute {
			t.Fatalf("negative entry's Redis TTL %v, want NegativeTTL (1m)", pttl)
		}
	})
	t.Run("off by default", func(t *testing.T) {
		c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "neg2", TTL: time.Hour})
		var n atomic.Int64
		for range 3 {
			if _, err := c.Get(ctx, "k", notFound(&n)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
		}
		if n.Load() != 3 {
			t.Fatalf("loader called %d times, want 3 (nothing cached)", n.Load())
		}
	})
}
