package cachex

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Get results, the `result` label of cachex_gets_total.
const (
	resultHit          = "hit"           // fresh value served
	resultEarlyRefresh = "early_refresh" // fresh value served, early refresh decided
	resultMiss         = "miss"          // the caller waited for a recompute
	resultStale        = "stale"         // recompute failed, value within grace served
	resultBypass       = "bypass"        // Redis unavailable, computed without it
)

// Recompute reasons, the `reason` label of cachex_recomputes_total.
const (
	reasonMiss    = "miss"
	reasonEarly   = "early"
	reasonExpired = "expired"
	reasonBypass  = "bypass" // Redis unavailable: the read computed without it (stores nothing)
)

// metrics are one cache's children of the shared cachex_* families, resolved
// once so that the hot path only increments.
type metrics struct {
	gets       map[string]prometheus.Counter
	recomputes map[[2]string]prometheus.Counter // reason, status
	discarded  prometheus.Counter
	duration   prometheus.Observer
	lead       prometheus.Observer
	contended  prometheus.Counter
	redisErrs  *prometheus.CounterVec // curried with the cache label
	strategy   *prometheus.GaugeVec   // curried with the cache label
}

func newMetrics(reg prometheus.Registerer, cache string) (*metrics, error) {
	gets := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachex_gets_total",
		Help: "Cache reads by result: hit, early_refresh (served, refresh started), miss (waited for a recompute), stale (served past expiry after a failed recompute), bypass (Redis unavailable).",
	}, []string{"cache", "result"})
	recomputes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachex_recomputes_total",
		Help: "Loader calls by reason (miss, early, expired, bypass: Redis unavailable) and status (ok, error, panic).",
	}, []string{"cache", "reason", "status"})
	discarded := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachex_recomputes_discarded_total",
		Help: "Recomputed values not stored because the key changed since the read that started the recompute (another recompute stored it first, or an invalidation).",
	}, []string{"cache"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "cachex_recompute_duration_seconds",
		Help:    "How long loader calls took (the XFetch delta).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"cache"})
	lead := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "cachex_refresh_lead_seconds",
		Help:    "How long before logical expiry an early refresh started.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"cache"})
	contended := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachex_refresh_lock_contended_total",
		Help: "Refreshes skipped because another instance held the key's refresh lock.",
	}, []string{"cache"})
	redisErrs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cachex_redis_errors_total",
		Help: "Failed Redis operations by op (get, set, lock, unlock, del, decode for corrupt or foreign entries).",
	}, []string{"cache", "op"})
	strategy := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "cachex_strategy_info",
		Help: "1 for the strategy the cache currently uses, 0 for the others.",
	}, []string{"cache", "strategy"})

	var err error
	if gets, err = share(reg, gets); err != nil {
		return nil, err
	}
	if recomputes, err = share(reg, recomputes); err != nil {
		return nil, err
	}
	if discarded, err = share(reg, discarded); err != nil {
		return nil, err
	}
	if duration, err = share(reg, duration); err != nil {
		return nil, err
	}
	if lead, err = share(reg, lead); err != nil {
		return nil, err
	}
	if contended, err = share(reg, contended); err != nil {
		return nil, err
	}
	if redisErrs, err = share(reg, redisErrs); err != nil {
		return nil, err
	}
	if strategy, err = share(reg, strategy); err != nil {
		return nil, err
	}
	m := &metrics{
		gets:       map[string]prometheus.Counter{},
		recomputes: map[[2]string]prometheus.Counter{},
		discarded:  discarded.WithLabelValues(cache),
		duration:   duration.WithLabelValues(cache),
		lead:       lead.WithLabelValues(cache),
		contended:  contended.WithLabelValues(cache),
		redisErrs:  redisErrs.MustCurryWith(prometheus.Labels{"cache": cache}),
		strategy:   strategy.MustCurryWith(prometheus.Labels{"cache": cache}),
	}
	for _, r := range []string{resultHit, resultEarlyRefresh, resultMiss, resultStale, resultBypass} {
		m.gets[r] = gets.WithLabelValues(cache, r)
	}
	for _, op := range []string{"get", "set", "lock", "unlock", "del", "decode", "encode"} {
		m.redisErrs.WithLabelValues(op) // export zeros: a rate of nothing is 0, not "no data"
	}
	for _, r := range []string{reasonMiss, reasonEarly, reasonExpired, reasonBypass} {
		for _, s := range []string{"ok", "error", "panic"} {
			m.recomputes[[2]string{r, s}] = recomputes.WithLabelValues(cache, r, s)
		}
	}
	return m, nil
}

// share registers c on reg, or returns the collector already registered under
// the same name by another cache, so caches can share a registry.
func share[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("cachex: register metrics: %w", err)
}

func (m *metrics) setStrategy(s Strategy) {
	for _, x := range []Strategy{XFetch, TTL, None} {
		v := 0.0
		if x == s {
			v = 1
		}
		m.strategy.WithLabelValues(string(x)).Set(v)
	}
}
