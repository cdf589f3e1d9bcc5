package torture

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/catalog"
)

// TestReserveWorkload runs the reserve workload through two API instances
// with the faults of a fixed seed: the history is linearizable, nothing is
// oversold, replays return their reservation.
func TestReserveWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers and fault injection")
	}
	res, err := RunReserve(context.Background(), ReserveConfig{Seed: 3, Duration: 15 * time.Second, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	if len(res.Anomalies) != 0 {
		t.Errorf("%d anomalies", len(res.Anomalies))
	}
	if res.Ops["reserve_done"] == 0 || res.Ops["cancel_done"] == 0 || len(res.FaultsByKind()) < 3 {
		t.Errorf("a run that proves little: operations %v, faults %v", res.Ops, res.FaultsByKind())
	}
}

// TestReserveWorkloadUnsafeIsCaught: against instances in unsafe mode,
// with reservations pausing between their warehouse read and write, the
// checker reports the oversell and a history that is not linearizable, with
// porcupine's visualisation.
func TestReserveWorkloadUnsafeIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers and fault injection")
	}
	dir := t.TempDir()
	faults := []Fault{{Kind: FaultClientPause, Node: -1, At: 100 * time.Millisecond, For: 4 * time.Second}}
	res, err := RunReserve(context.Background(), ReserveConfig{Seed: 1, Duration: 7 * time.Second, Mode: catalog.ModeUnsafe, OutDir: dir, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	res.Print(os.Stdout)
	seen := map[string]bool{}
	for _, a := range res.Anomalies {
		seen[a.Check] = true
	}
	if !seen["free units linearizable per product"] || !seen["nothing oversold"] {
		t.Errorf("anomalies %v: want the history not linearizable and units oversold", seen)
	}
	if _, err := os.Stat(filepath.Join(dir, "linearizability.html")); err != nil {
		t.Error(err)
	}
}
