package torture

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// errorSampleEvery is how often redisErrors reads the caches' error count.
const errorSampleEvery = 20 * time.Millisecond

// redisErrors records when the workload's caches counted a failed Redis
// call (cachex_redis_errors_total): a read then bypasses Redis and loads by
// itself, as it should, so the recompute check leaves that TTL window out.
// It sees what the scheduling-lag control cannot: a Redis server, not this
// process, starved of CPU.
type redisErrors struct {
	reg  *prometheus.Registry
	mu   sync.Mutex
	seen []time.Time // samples at which the count had grown
}

// run samples until ctx ends.
func (r *redisErrors) run(ctx context.Context) {
	t := time.NewTicker(errorSampleEvery)
	defer t.Stop()
	last := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := r.count(); n > last {
				last = n
				r.mu.Lock()
				r.seen = append(r.seen, now)
				r.mu.Unlock()
			}
		}
	}
}

// count returns the sum of the caches' cachex_redis_errors_total.
func (r *redisErrors) count() float64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		return 0
	}
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "cachex_redis_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// during reports whether a failed call was counted from from to to (a
// sample late by up to errorSampleEvery still counts). A nil r has none.
func (r *redisErrors) during(from, to time.Time) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.seen {
		if !at.Before(from) && !at.After(to.Add(errorSampleEvery)) {
			return true
		}
	}
	return false
}
