package catalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Faults are the failure injections the admin API switches on for demos.
// Every knob is off by default (zero); percentages are 0..100 and say how
// many of the affected operations the fault hits.
type Faults struct {
	// DBLatencyMS is added before that share of database queries.
	DBLatencyMS      int `json:"db_latency_ms"`
	DBLatencyPercent int `json:"db_latency_percent"`
	// CacheRedisDownPercent makes that share of the caches' Redis commands
	// fail as if Redis were unreachable (the caches bypass it).
	CacheRedisDownPercent int `json:"cache_redis_down_percent"`
	// ReservationPauseMS pauses that share of reservations inside the
	// critical section, after the lock is taken and checked, as a
	// stop-the-world pause would: longer than the lock's TTL, the lock is
	// lost and the late write is fenced.
	ReservationPauseMS      int `json:"reservation_pause_ms"`
	ReservationPausePercent int `json:"reservation_pause_percent"`
}

// Validate reports knobs out of range: percentages 0..100, milliseconds
// 0..60000.
func (f Faults) Validate() error {
	var errs []error
	for name, v := range f.knobs() {
		limit := 100
		if strings.HasSuffix(name, "_ms") {
			limit = 60_000
		}
		if v < 0 || v > limit {
			errs = append(errs, fmt.Errorf("%s must be within 0..%d, got %d", name, limit, v))
		}
	}
	return errors.Join(errs...)
}

// knobs are the Faults by their JSON names (also catalog_fault_setting's
// knob label values).
func (f Faults) knobs() map[string]int {
	return map[string]int{
		"db_latency_ms": f.DBLatencyMS, "db_latency_percent": f.DBLatencyPercent,
		"cache_redis_down_percent": f.CacheRedisDownPercent,
		"reservation_pause_ms":     f.ReservationPauseMS, "reservation_pause_percent": f.ReservationPausePercent,
	}
}

// Injector holds the current Faults; safe for concurrent use. The zero
// value injects nothing.
type Injector struct {
	mu    sync.RWMutex
	f     Faults
	gauge *prometheus.GaugeVec // made by Collector
}

// Collector returns the gauge catalog_fault_setting{knob}, each knob's
// current value (0 = off), kept in step by Set; the same one every call.
func (in *Injector) Collector() prometheus.Collector {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.gauge == nil {
		in.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "catalog_fault_setting",
			Help: "The admin API's fault knobs (GET /admin/faults) by knob: milliseconds or percent, 0 = off.",
		}, []string{"knob"})
		in.export()
	}
	return in.gauge
}

// export copies the knobs to the gauge, if there is one; in.mu is held.
func (in *Injector) export() {
	if in.gauge == nil {
		return
	}
	for k, v := range in.f.knobs() {
		in.gauge.WithLabelValues(k).Set(float64(v))
	}
}

// Get returns the current faults.
func (in *Injector) Get() Faults {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.f
}

// Set replaces the faults after validating them.
func (in *Injector) Set(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	in.mu.Lock()
	in.f = f
	in.export()
	in.mu.Unlock()
	return nil
}

func hit(percent int) bool { return percent > 0 && (percent >= 100 || rand.IntN(100) < percent) }

// DBDelay waits the injected database latency, if this query is hit; it
// returns early with ctx's error.
func (in *Injector) DBDelay(ctx context.Context) error {
	f := in.Get()
	if f.DBLatencyMS == 0 || !hit(f.DBLatencyPercent) {
		return nil
	}
	return FixedDelay(time.Duration(f.DBLatencyMS) * time.Millisecond)(ctx)
}

// ReservationPause is how long this reservation pauses in its critical
// section (usually 0).
func (in *Injector) ReservationPause() time.Duration {
	f := in.Get()
	if f.ReservationPauseMS == 0 || !hit(f.ReservationPausePercent) {
		return 0
	}
	return time.Duration(f.ReservationPauseMS) * time.Millisecond
}

// errInjectedDown is what a cache's Redis command fails with while the
// CacheRedisDownPercent fault hits it: a network error, as a refused
// connection would be, so the cache treats Redis as unreachable.
var errInjectedDown = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("injected fault: Redis treated as down")}

// CacheHook returns a go-redis hook for the caches' client that fails
// commands while the CacheRedisDownPercent fault hits them.
func (in *Injector) CacheHook() redis.Hook { return cacheFaultHook{in} }

type cacheFaultHook struct{ in *Injector }

func (h cacheFaultHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h cacheFaultHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if hit(h.in.Get().CacheRedisDownPercent) {
			cmd.SetErr(errInjectedDown)
			return errInjectedDown
		}
		return next(ctx, cmd)
	}
}

func (h cacheFaultHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if hit(h.in.Get().CacheRedisDownPercent) {
			for _, c := range cmds {
				c.SetErr(errInjectedDown)
			}
			return errInjectedDown
		}
		return next(ctx, cmds)
	}
}
