package catalog

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestFaultGaugeFollowsSet: catalog_fault_setting shows each knob's value
// from the moment the collector is made, and every Set after it; a rejected
// Set changes nothing.
func TestFaultGaugeFollowsSet(t *testing.T) {
	t.Parallel()
	in := &Injector{}
	if err := in.Set(Faults{DBLatencyMS: 200}); err != nil {
		t.Fatal(err)
	}
	g := in.Collector()
	if g != in.Collector() {
		t.Fatal("Collector returned two collectors")
	}
	want := func(knob string, v float64) {
		t.Helper()
		if got := testutil.ToFloat64(in.gauge.WithLabelValues(knob)); got != v {
			t.Errorf("catalog_fault_setting{knob=%q} = %v, want %v", knob, got, v)
		}
	}
	want("db_latency_ms", 200)
	want("cache_redis_down_percent", 0)
	if err := in.Set(Faults{CacheRedisDownPercent: 100, ReservationPauseMS: 6000, ReservationPausePercent: 50}); err != nil {
		t.Fatal(err)
	}
	want("db_latency_ms", 0)
	want("cache_redis_down_percent", 100)
	want("reservation_pause_ms", 6000)
	want("reservation_pause_percent", 50)
	if err := in.Set(Faults{DBLatencyPercent: 101}); err == nil {
		t.Fatal("Set accepted 101%")
	}
	want("cache_redis_down_percent", 100)
	if n := testutil.CollectAndCount(g); n != 5 {
		t.Errorf("%d series, want one per knob (5)", n)
	}
}
