package cachex

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// NearCacheCollector returns the metrics of rdb's near cache (go-redis
// client-side caching), read from the client at each scrape and labelled
// client: cachex_near_hits_total and cachex_near_misses_total (reads it
// served from memory, and those it sent to Redis), cachex_near_entries and
// cachex_near_bytes (what it holds), and cachex_near_invalidations_total
// (keys named in the invalidation pushes received), the last only when the
// client's ClientSideCache is a *redis.LocalCache of go-redis v9.23 or later. Register it once per client: the
// caches over one client share its near cache.
func NearCacheCollector(rdb *redis.Client, client string) prometheus.Collector {
	labels := prometheus.Labels{"client": client}
	stats := func(f func(redis.CSCStats) float64) func() float64 {
		return func() float64 { return f(rdb.CSCStats()) }
	}
	cs := collectors{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cachex_near_hits_total", ConstLabels: labels,
			Help: "Reads the client's near cache served from process memory."}, stats(func(s redis.CSCStats) float64 { return float64(s.Hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cachex_near_misses_total", ConstLabels: labels,
			Help: "Cacheable reads the client's near cache sent to Redis."}, stats(func(s redis.CSCStats) float64 { return float64(s.Misses) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cachex_near_entries", ConstLabels: labels,
			Help: "Replies held in the client's near cache."}, stats(func(s redis.CSCStats) float64 { return float64(s.Entries) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cachex_near_bytes", ConstLabels: labels,
			Help: "Estimated bytes held in the client's near cache."}, stats(func(s redis.CSCStats) float64 { return float64(s.MemoryUsageBytes) })),
	}
	// go-redis v9.23's LocalCache counts them; v9.22's does not.
	if lc, ok := rdb.Options().ClientSideCache.(interface{ InvalidationStats() uint64 }); ok {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cachex_near_invalidations_total", ConstLabels: labels,
			Help: "Keys named in the invalidation pushes from Redis the client's near cache received."}, func() float64 { return float64(lc.InvalidationStats()) }))
	}
	return cs
}

// collectors is several collectors as one.
type collectors []prometheus.Collector

func (cs collectors) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range cs {
		c.Describe(ch)
	}
}

func (cs collectors) Collect(ch chan<- prometheus.Metric) {
	for _, c := range cs {
		c.Collect(ch)
	}
}
