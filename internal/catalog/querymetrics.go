package catalog

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// QueryMetrics registers catalog_db_query_duration_seconds (a histogram by
// query name, with a zero series for every name in QueryNames so that rates
// read 0 rather than "no data") on reg and returns the Observer that records
// into it, for the Store (WithObserver) and the Warehouse.
func QueryMetrics(reg prometheus.Registerer) (Observer, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "catalog_db_query_duration_seconds",
		Help:    "Database query latency by query name (with any injected latency).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"query"})
	if err := reg.Register(h); err != nil {
		return nil, err
	}
	for _, q := range QueryNames() {
		h.WithLabelValues(q)
	}
	return func(q string, d time.Duration) { h.WithLabelValues(q).Observe(d.Seconds()) }, nil
}
