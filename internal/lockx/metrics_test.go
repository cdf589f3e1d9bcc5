package lockx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestMetricsShowContention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	reg := prometheus.NewRegistry()
	a, _ := newLocker(t, clients(t, node), Options{Name: "inventory", TTL: 10 * time.Second, Registerer: reg})
	b, _ := newLocker(t, clients(t, node), Options{Name: "inventory", TTL: 10 * time.Second, Wait: time.Second, Registerer: reg})
	held, err := a.Acquire(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "1"); !errors.Is(err, ErrNotAcquired) {
		t.Fatal(err)
	}
	_ = held.Release()

	if got := testutil.ToFloat64(a.m.acquired); got != 1 {
		t.Errorf("acquired = %v, want 1", got)
	}
	if got := testutil.ToFloat64(a.m.timeout); got != 1 {
		t.Errorf("timeout = %v, want 1", got)
	}
	if got := testutil.ToFloat64(a.m.attempts); got < 3 {
		t.Errorf("attempts = %v, want the waiter's retries counted (>= 3)", got)
	}
	for _, family := range []string{
		"lockx_acquire_total", "lockx_acquire_attempts_total", "lockx_acquire_wait_seconds",
		"lockx_held_seconds", "lockx_extensions_total", "lockx_lost_total",
	} {
		if n := testutil.CollectAndCount(reg, family); n == 0 {
			t.Errorf("%s is not exported", family)
		}
	}
}
