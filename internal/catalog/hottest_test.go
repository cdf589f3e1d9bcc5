package catalog

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// hottestValues collects h into a map of cache to value.
func hottestValues(t *testing.T, h *hottestKeys) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestHottestKeyRecomputes: the gauge shows, per cache, the most
// recomputes of one key in the last complete window of the cache's TTL; a
// window with no recompute, or a window after a skipped one, shows 0; a
// cache it does not know is ignored.
func TestHottestKeyRecomputes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0) // a multiple of 10 s: a category_stats window starts
	h := newHottestKeys(map[string]time.Duration{"category_stats": 10 * time.Second, "product": 40 * time.Second}, func() time.Time { return now })
	want := func(stats, product float64) {
		t.Helper()
		got := hottestValues(t, h)
		if len(got) != 2 || got["category_stats"] != stats || got["product"] != product {
			t.Errorf("at %ds: %v, want category_stats %g, product %g", now.Unix(), got, stats, product)
		}
	}
	for range 12 {
		h.record("category_stats", "1") // a stampede on key 1
	}
	h.record("category_stats", "2")
	h.record("product", "7") // product's window is 960..1000..: 1000 starts one (1000 = 25 x 40)
	h.record("unknown", "1")
	want(0, 0) // no window is over yet
	now = now.Add(10 * time.Second)
	h.record("category_stats", "1")
	want(12, 0)
	now = now.Add(10 * time.Second)
	want(1, 0)
	now = now.Add(20 * time.Second) // 1040: product's window ended; category_stats skipped one
	want(0, 1)
}
