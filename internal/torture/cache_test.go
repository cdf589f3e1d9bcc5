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
	t.Parallel()
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

// TestCacheRecomputesWhileHealthy: with no fault, every TTL window in which
// the process ran on time is checked for recomputes, and none has too many.
// On a busy machine windows where the process stalled are skipped, so it
// runs again (up to five runs) until two windows were checked.
func TestCacheRecomputesWhileHealthy(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	t.Parallel()
	quiet := 0
	for run := 0; run < 5 && quiet < 2; run++ {
		res, err := RunCache(context.Background(), CacheConfig{Seed: 2 + uint64(run), Duration: 5 * time.Second, Faults: []Fault{}})
		if err != nil {
			t.Fatal(err)
		}
		res.Print(os.Stdout)
		if len(res.Anomalies) != 0 {
			t.Errorf("run %d: %d anomalies", run, len(res.Anomalies))
		}
		quiet += res.Ops["quiet_ttl_windows"]
	}
	if quiet < 2 {
		t.Errorf("a check that proves little: %d windows checked in five runs, the others had a fault or a stall", quiet)
	}
}

// TestCacheWorkloadUnsafeIsCaught: a naive cache that writes a loaded value
// back unguarded serves stale values after invalidations, and the checker
// says so.
func TestCacheWorkloadUnsafeIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	t.Parallel()
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

// TestCacheNearCacheStaysWithinItsBound: the near-cache variant, under the
// faults drawn from its seed, reads the other instance's writes within the
// near cache's bound, and its own at once.
func TestCacheNearCacheStaysWithinItsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	t.Parallel()
	res, err := RunCache(context.Background(), CacheConfig{Seed: 3, Duration: 10 * time.Second, Near: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	if len(res.Anomalies) != 0 {
		t.Errorf("%d anomalies", len(res.Anomalies))
	}
	if res.Ops["read"] == 0 || res.Ops["write"] == 0 || len(res.FaultsByKind()) == 0 {
		t.Errorf("a run that proves little: operations %v, faults %v", res.Ops, res.FaultsByKind())
	}
}

// TestCacheNearCacheThatDropsInvalidationsIsCaught: near caches deaf to
// Redis's invalidation pushes serve old values past the bound, and the
// bounded-staleness check says so.
func TestCacheNearCacheThatDropsInvalidationsIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	t.Parallel()
	res, err := RunCache(context.Background(), CacheConfig{Seed: 1, Duration: 5 * time.Second, Near: 500 * time.Millisecond, Unsafe: true, Faults: []Fault{}})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	if !checks(res)[checkBoundedName] {
		t.Errorf("anomalies %v: want the bounded-staleness check to find reads older than the bound", checks(res))
	}
}
