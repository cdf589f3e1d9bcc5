package torture

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestCacheWorkload reads through two cachex instances while writers
// invalidate and the faults of a fixed seed (clock skews among them) hit
// the cluster: no stale read, no read error.
func TestCacheWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers and fault injection")
	}
	res, err := RunCache(context.Background(), CacheConfig{Seed: 9, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	if len(res.Anomalies) != 0 {
		t.Errorf("%d anomalies", len(res.Anomalies))
	}
	if res.Ops["read"] == 0 || res.Ops["write"] == 0 || len(res.FaultsByKind()) < 3 || res.FaultsByKind()[FaultClockSkew] == 0 {
		t.Errorf("a run that proves little: operations %v, faults %v", res.Ops, res.FaultsByKind())
	}
}

// TestCacheRecomputesWhileHealthy: with no fault, every TTL window is
// checked for recomputes, and none has too many.
func TestCacheRecomputesWhileHealthy(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	res, err := RunCache(context.Background(), CacheConfig{Seed: 2, Duration: 5 * time.Second, Faults: []Fault{}})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	if len(res.Anomalies) != 0 || res.Ops["quiet_ttl_windows"] < 2 {
		t.Errorf("a run that proves little: operations %v, faults %v", res.Ops, res.FaultsByKind())
	}
}

// TestCacheWorkloadUnsafeIsCaught: a naive cache that writes a loaded value
// back unguarded serves stale values after invalidations, and the checker
// says so.
func TestCacheWorkloadUnsafeIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	res, err := RunCache(context.Background(), CacheConfig{Seed: 1, Duration: 5 * time.Second, Unsafe: true, Faults: []Fault{}})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	found := false
	for _, a := range res.Anomalies {
		found = found || a.Check == "no stale read after an invalidation"
	}
	if !found {
		t.Error("the checker did not see the stale reads of the unguarded write-back")
	}
}
