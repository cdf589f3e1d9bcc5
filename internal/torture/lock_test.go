package torture

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestLockWorkload runs the lock workload for a few seconds on a 3-node
// quorum with the faults of a fixed seed: the checks find nothing.
func TestLockWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers and fault injection")
	}
	t.Parallel()
	res, err := RunLock(context.Background(), LockConfig{Seed: 7, Duration: 15 * time.Second, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	if len(res.Anomalies) != 0 {
		t.Errorf("%d anomalies", len(res.Anomalies))
	}
	if res.Ops["writes_accepted"] == 0 || len(res.FaultsByKind()) < 3 {
		t.Errorf("a run that proves little: %v writes accepted, faults %v", res.Ops["writes_accepted"], res.FaultsByKind())
	}
}

// TestLockWorkloadUnsafeIsCaught: with the register's token check off and
// holders pausing past the TTL, the checker reports overlapping writes.
func TestLockWorkloadUnsafeIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers and fault injection")
	}
	t.Parallel()
	faults := []Fault{{Kind: FaultClientPause, Node: -1, At: 200 * time.Millisecond, For: 5 * time.Second}}
	res, err := RunLock(context.Background(), LockConfig{Seed: 1, Duration: 8 * time.Second, Nodes: 1, Unsafe: true, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	found := false
	for _, a := range res.Anomalies {
		found = found || a.Check == "no overlapping accepted writes"
	}
	if !found {
		t.Error("the checker did not see the overlapping writes of paused holders without fencing")
	}
}
