package loadgen

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CodeDropped is the code label of arrivals the Runner did not start
// because MaxInFlight requests were in flight.
const CodeDropped = "dropped"

// DurationBuckets are the loadgen_request_duration_seconds bucket bounds in
// seconds: from 0.5ms (a cache hit on loopback) to 60s (a request stuck
// behind a stampede or a client timeout).
var DurationBuckets = []float64{
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60,
}

// Metrics is loadgen's client-side Prometheus instrumentation
// (docs/metrics.md): loadgen_requests_total and loadgen_request_duration_seconds,
// both labelled scenario, endpoint, code. It is safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the loadgen metrics and registers them on reg (never
// the global registry). It fails if reg already holds metrics of the same
// names.
func NewMetrics(reg *prometheus.Registry) (*Metrics, error) {
	labels := []string{"scenario", "endpoint", "code"}
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loadgen_requests_total",
			Help: "Requests loadgen scheduled, by outcome: an HTTP status code, \"timeout\", \"canceled\", \"error\", or \"dropped\" for arrivals not started because -max-in-flight requests were in flight.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "loadgen_request_duration_seconds",
			Help:    "Client latency measured from each request's scheduled start (no coordinated omission); dropped arrivals are not observed.",
			Buckets: DurationBuckets,
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observe records one Runner result of scenario: a dropped arrival counts in
// loadgen_requests_total with code "dropped" and no duration; any other
// result counts with its Outcome's endpoint and code and observes its
// Latency. Empty endpoint or code labels are recorded as "-", as in Stats.
func (m *Metrics) Observe(scenario string, r Result) {
	endpoint := orDash(r.Endpoint)
	if r.Dropped {
		m.requests.WithLabelValues(scenario, endpoint, CodeDropped).Inc()
		return
	}
	code := orDash(r.Code)
	m.requests.WithLabelValues(scenario, endpoint, code).Inc()
	m.duration.WithLabelValues(scenario, endpoint, code).Observe(r.Latency.Seconds())
}

// Handler serves the registry given to NewMetrics in the Prometheus text
// format or, when the scraper asks for it, OpenMetrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}
