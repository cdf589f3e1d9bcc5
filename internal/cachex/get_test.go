package cachex

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestGetHitAfterMissOneRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, Raw{}, Options{Name: "hit", TTL: time.Minute})
	l := &loader{}
	load := func(ctx context.Context) ([]byte, error) { s, err := l.load(ctx); return []byte(s), err }

	v, err := c.Get(ctx, "k", load)
	if err != nil || string(v) != "v1" {
		t.Fatalf("first Get = %q, %v", v, err)
	}
	for range 10 {
		v, err = c.Get(ctx, "k", load)
		if err != nil || string(v) != "v1" {
			t.Fatalf("Get = %q, %v; want the cached v1", v, err)
		}
	}
	if l.calls.Load() != 1 || gets(c, resultMiss) != 1 || gets(c, resultHit) != 10 {
		t.Fatalf("loader calls %d, misses %d, hits %d; want 1, 1, 10", l.calls.Load(), gets(c, resultMiss), gets(c, resultHit))
	}
	// Redis TTL = logical TTL + grace (default grace = TTL).
	pttl := rdb.PTTL(ctx, c.redisKey("k")).Val()
	if pttl <= time.Minute || pttl > 2*time.Minute {
		t.Fatalf("Redis TTL %v, want in (1m, 2m]", pttl)
	}
}

func TestGetCorruptOrForeignEntryIsCountedAndRecomputed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[int]{}, Options{Name: "corrupt", TTL: time.Minute})
	good, _, _ := c.encode(7, false, time.Millisecond)
	for name, set := range map[string]func(rk string) error{
		"foreign string": func(rk string) error { return rdb.Set(ctx, rk, "hello", 0).Err() },
		"truncated":      func(rk string) error { return rdb.Set(ctx, rk, good[:10], 0).Err() },
		"wrong version":  func(rk string) error { b := append([]byte{}, good...); b[1] = 9; return rdb.Set(ctx, rk, b, 0).Err() },
		"bad payload": func(rk string) error {
			return rdb.Set(ctx, rk, append(good[:envHeaderSize:envHeaderSize], '{'), 0).Err()
		},
		"foreign type": func(rk string) error { return rdb.LPush(ctx, rk, "x").Err() },
	} {
		t.Run(name, func(t *testing.T) {
			key := name
			if err := set(c.redisKey(key)); err != nil {
				t.Fatal(err)
			}
			before := recomputes(c, reasonMiss, "ok")
			v, err := c.Get(ctx, key, func(context.Context) (int, error) { return 42, nil })
			if err != nil || v != 42 {
				t.Fatalf("Get = %d, %v; want the recomputed 42", v, err)
			}
			if got := recomputes(c, reasonMiss, "ok") - before; got != 1 {
				t.Fatalf("%d recomputes, want 1", got)
			}
			// The bad entry was replaced by a good one.
			v, err = c.Get(ctx, key, func(context.Context) (int, error) { return 0, errors.New("not called") })
			if err != nil || v != 42 {
				t.Fatalf("second Get = %d, %v", v, err)
			}
		})
	}
	if n := int(testutil.ToFloat64(c.m.redisErrs.WithLabelValues("decode"))); n != 5 {
		t.Fatalf("decode errors counted: %d, want 5 (the foreign type too)", n)
	}
	if n := int(testutil.ToFloat64(c.m.redisErrs.WithLabelValues("get"))); n != 0 {
		t.Fatalf("get errors counted: %d, want 0 (a key of another type is not Redis trouble)", n)
	}
}

func TestMissIsDeduplicatedInProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "dedup", TTL: time.Minute})
	l := &loader{release: make(chan struct{})}
	var wg sync.WaitGroup
	results := make([]string, 100)
	for i := range results {
		wg.Go(func() {
			v, err := c.Get(ctx, "hot", l.load)
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		})
	}
	waitFor(t, "the loader to be called", func() bool { return l.calls.Load() == 1 })
	close(l.release)
	wg.Wait()
	for _, v := range results {
		if v != "v1" {
			t.Fatalf("a caller got %q, want v1", v)
		}
	}
	if l.calls.Load() != 1 {
		t.Fatalf("loader called %d times for 100 concurrent misses, want 1", l.calls.Load())
	}
}

func TestColdMissWaitsForAnotherInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	a, _ := newCache(t, client(t, node), JSON[string]{}, Options{Name: "lease", TTL: time.Minute})
	bClient := client(t, node)
	bCmds := &commands{}
	bClient.AddHook(bCmds)
	b, _ := newCache(t, bClient, JSON[string]{}, Options{Name: "lease", TTL: time.Minute})

	la := &loader{release: make(chan struct{})}
	done := make(chan string)
	go func() { v, _ := a.Get(ctx, "k", la.load); done <- v }()
	waitFor(t, "instance A to start loading", func() bool { return la.calls.Load() == 1 })

	lb := &loader{}
	got := make(chan string)
	go func() { v, _ := b.Get(ctx, "k", lb.load); got <- v }()
	// B finds A's lease and polls (a second GET) before A finishes.
	waitFor(t, "instance B to poll", func() bool { return bCmds.count("get") >= 2 })
	close(la.release)
	if v := <-done; v != "v1" {
		t.Fatalf("A got %q", v)
	}
	if v := <-got; v != "v1" {
		t.Fatalf("B got %q, want A's v1", v)
	}
	if lb.calls.Load() != 0 {
		t.Fatalf("B's loader ran %d times while A held the lease", lb.calls.Load())
	}
}

func TestColdMissLeaseWaitIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := client(t, node)
	b, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "lease", TTL: time.Minute, LeaseWait: 100 * time.Millisecond})
	// Another instance took the lease and died: the lock stays until it expires.
	if err := rdb.Set(ctx, lockKey(b.redisKey("k")), "dead", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	l := &loader{}
	v, err := b.Get(ctx, "k", l.load)
	if err != nil || v != "v1" || l.calls.Load() != 1 {
		t.Fatalf("Get = %q, %v after %d loads; want to compute after the lease wait", v, err, l.calls.Load())
	}
}
