package catalog

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// hottestDesc is catalog_hottest_key_recomputes (docs/metrics.md).
var hottestDesc = prometheus.NewDesc("catalog_hottest_key_recomputes",
	"Database recomputes of the cache's most recomputed key in the last complete TTL window (windows of the cache's TTL, aligned to the clock): 1 when each key is recomputed once per TTL, more in a stampede; 0 when no key was recomputed.",
	[]string{"cache"}, nil)

// hottestKeys counts each cache's recomputes per key in windows of the
// cache's TTL and keeps, per cache, the most any one key had in the last
// complete window. It is a prometheus.Collector; safe for concurrent use.
type hottestKeys struct {
	now func() time.Time

	mu     sync.Mutex
	caches map[string]*keyWindow
}

// keyWindow is one cache's recomputes per key in the current window.
type keyWindow struct {
	length time.Duration
	start  time.Time      // the current window's start
	counts map[string]int // recomputes per key in it
	last   int            // the most of one key in the window before it
}

// newHottestKeys returns counters for the caches named in ttls, each
// counting in windows of its TTL.
func newHottestKeys(ttls map[string]time.Duration, now func() time.Time) *hottestKeys {
	h := &hottestKeys{now: now, caches: map[string]*keyWindow{}}
	for name, ttl := range ttls {
		h.caches[name] = &keyWindow{length: ttl, counts: map[string]int{}}
	}
	return h
}

// record counts a recompute of key in cache.
func (h *hottestKeys) record(cache, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.caches[cache]
	if w == nil {
		return
	}
	w.roll(h.now())
	w.counts[key]++
}

// roll moves w to the window that holds now: the count of the window that
// ended becomes last (0 when a whole window passed with no recompute).
func (w *keyWindow) roll(now time.Time) {
	start := now.Truncate(w.length)
	if start.Equal(w.start) {
		return
	}
	w.last = 0
	if start.Sub(w.start) == w.length {
		for _, n := range w.counts {
			w.last = max(w.last, n)
		}
	}
	w.start, w.counts = start, map[string]int{}
}

// Describe sends catalog_hottest_key_recomputes.
func (h *hottestKeys) Describe(ch chan<- *prometheus.Desc) { ch <- hottestDesc }

// Collect sends each cache's hottest key's recomputes in the last complete
// window.
func (h *hottestKeys) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for name, w := range h.caches {
		w.roll(now)
		ch <- prometheus.MustNewConstMetric(hottestDesc, prometheus.GaugeValue, float64(w.last), name)
	}
}
