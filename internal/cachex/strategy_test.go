package cachex

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestStrategySwitchesAtRunTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "switch", TTL: time.Minute})
	l := &loader{}
	strategyIs := func(s Strategy) {
		t.Helper()
		for _, x := range []Strategy{XFetch, TTL, None} {
			want := 0.0
			if x == s {
				want = 1
			}
			if got := testutil.ToFloat64(c.m.strategy.WithLabelValues(string(x))); got != want {
				t.Fatalf("cachex_strategy_info{strategy=%q} = %v, want %v", x, got, want)
			}
		}
	}
	strategyIs(XFetch)
	for range 3 {
		_, _ = c.Get(ctx, "k", l.load)
	}
	if l.calls.Load() != 1 {
		t.Fatalf("xfetch: %d loads for 3 reads, want 1", l.calls.Load())
	}

	if err := c.SetStrategy(None); err != nil {
		t.Fatal(err)
	}
	strategyIs(None)
	for range 3 {
		_, _ = c.Get(ctx, "k", l.load)
	}
	if l.calls.Load() != 4 {
		t.Fatalf("none: %d loads in all, want 1+3 (every read computes)", l.calls.Load())
	}

	if err := c.SetStrategy(TTL); err != nil {
		t.Fatal(err)
	}
	strategyIs(TTL)
	if v, _ := c.Get(ctx, "k", l.load); v != "v1" {
		t.Fatalf("ttl reads the entry xfetch wrote: got %q, want v1", v)
	}

	if err := c.SetStrategy("fastest"); err == nil {
		t.Fatal("an unknown strategy was accepted")
	}
	if c.Strategy() != TTL {
		t.Fatalf("strategy %q after a rejected switch, want ttl", c.Strategy())
	}
	if err := c.SetBeta(0); err == nil {
		t.Error("SetBeta(0) accepted: 0 would mean no early refresh here and the default 1 in Options")
	}
	if err := c.SetBeta(-1); err == nil {
		t.Fatal("a negative beta was accepted")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	for name, opts := range map[string]Options{
		"no name":      {TTL: time.Second},
		"no ttl":       {Name: "x"},
		"negative":     {Name: "x", TTL: time.Second, Grace: -1},
		"bad strategy": {Name: "x", TTL: time.Second, Strategy: "lru"},
	} {
		if _, err := New(rdb, JSON[string]{}, opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
	// A client that could hold a call for its 2s read timeout is refused.
	slow := redistest.Client(t, redistest.New(t), func(o *redis.Options) { o.ContextTimeoutEnabled = false })
	if _, err := New(slow, JSON[string]{}, Options{Name: "x", TTL: time.Second}); err == nil {
		t.Error("New accepted a client that ignores context deadlines")
	}
}
