package cachex

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestMetricsMatchTheContract(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	reg := prometheus.NewRegistry()
	// Two caches share one registry.
	a, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "product", TTL: time.Minute, Registerer: reg})
	b, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "category_stats", TTL: time.Minute, Registerer: reg})
	l := &loader{}
	for range 2 {
		_, _ = a.Get(ctx, "1", l.load)
		_, _ = b.Get(ctx, "1", l.load)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	want := []string{
		"cachex_gets_total", "cachex_recompute_duration_seconds", "cachex_recomputes_total",
		"cachex_recomputes_discarded_total", "cachex_redis_errors_total", "cachex_refresh_lead_seconds", "cachex_refresh_lock_contended_total",
		"cachex_strategy_info",
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("family %s not registered; got %v", w, names)
		}
	}
	for _, c := range []*Cache[string]{a, b} {
		if gets(c, resultMiss) != 1 || gets(c, resultHit) != 1 || recomputes(c, reasonMiss, "ok") != 1 {
			t.Errorf("%s: miss %d hit %d recomputes %d, want 1 1 1", c.Name(), gets(c, resultMiss), gets(c, resultHit), recomputes(c, reasonMiss, "ok"))
		}
	}
	// Labels are the contract's: cache and result.
	if n := testutil.CollectAndCount(reg, "cachex_gets_total"); n != 10 {
		t.Errorf("cachex_gets_total has %d series, want 2 caches x 5 results", n)
	}
	if count, _ := histogram(t, reg, "cachex_recompute_duration_seconds"); count != 2 {
		t.Errorf("recompute duration samples %d, want 2", count)
	}
}
