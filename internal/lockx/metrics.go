package lockx

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are one Locker's children of the shared lockx_* families.
type metrics struct {
	acquired, timeout, failed prometheus.Counter
	attempts                  prometheus.Counter
	wait, held                prometheus.Observer
	extOK, extLost, extError  prometheus.Counter
	lost                      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, name string) (*metrics, error) {
	acquire := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockx_acquire_total",
		Help: "Acquire calls by result: acquired, timeout (held by another until the wait budget ran out), error (too few servers answered, or the caller gave up).",
	}, []string{"name", "result"})
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockx_acquire_attempts_total",
		Help: "Attempts to take a lock; attempts per acquisition measure contention.",
	}, []string{"name"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lockx_acquire_wait_seconds",
		Help:    "Time from Acquire to holding the lock (or giving up).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"name"})
	held := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lockx_held_seconds",
		Help:    "Time from acquiring a lock to releasing it or, if it was lost, to the loss.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
	}, []string{"name"})
	ext := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockx_extensions_total",
		Help: "Watchdog extensions by result: ok, lost (the lock was gone), error (no quorum answered).",
	}, []string{"name", "result"})
	lost := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockx_lost_total",
		Help: "Locks lost while held: the holder's context was cancelled with ErrLost.",
	}, []string{"name"})

	var err error
	if acquire, err = share(reg, acquire); err != nil {
		return nil, err
	}
	if attempts, err = share(reg, attempts); err != nil {
		return nil, err
	}
	if wait, err = share(reg, wait); err != nil {
		return nil, err
	}
	if held, err = share(reg, held); err != nil {
		return nil, err
	}
	if ext, err = share(reg, ext); err != nil {
		return nil, err
	}
	if lost, err = share(reg, lost); err != nil {
		return nil, err
	}
	return &metrics{
		acquired: acquire.WithLabelValues(name, "acquired"),
		timeout:  acquire.WithLabelValues(name, "timeout"),
		failed:   acquire.WithLabelValues(name, "error"),
		attempts: attempts.WithLabelValues(name),
		wait:     wait.WithLabelValues(name),
		held:     held.WithLabelValues(name),
		extOK:    ext.WithLabelValues(name, "ok"),
		extLost:  ext.WithLabelValues(name, "lost"),
		extError: ext.WithLabelValues(name, "error"),
		lost:     lost.WithLabelValues(name),
	}, nil
}

// share registers c on reg, or returns the collector another Locker already
// registered under the same name.
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
	return c, fmt.Errorf("lockx: register metrics: %w", err)
}
