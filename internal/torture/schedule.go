package torture

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults. Proxy toxics act between the clients and one server; the
// others act on the server process or on the clients.
const (
	FaultLatency     Kind = "latency"      // 150ms ± 50ms each way
	FaultTimeout     Kind = "timeout"      // traffic swallowed, nothing answered
	FaultResetPeer   Kind = "reset_peer"   // connections reset
	FaultSlowClose   Kind = "slow_close"   // closes delayed 500ms
	FaultBandwidth   Kind = "bandwidth"    // 1 KB/s
	FaultPause       Kind = "pause"        // SIGSTOP, then SIGCONT
	FaultRestart     Kind = "restart"      // SIGKILL, restarted empty at the end
	FaultSnapshot    Kind = "snapshot"     // SAVE at the start, SIGKILL and restart from it at the end
	FaultClientPause Kind = "client_pause" // critical sections begun meanwhile stop past the lock's TTL
	FaultClockSkew   Kind = "clock_skew"   // one cache instance's clock runs ahead (cache workload only)
	FaultTerminate   Kind = "terminate"    // every database session of the run terminated, again and again (reserve workload only)
	FaultRowLock     Kind = "row_lock"     // the products' inventory rows locked, one API's database slowed past the lock's TTL (reserve workload only)
)

// Kinds lists the fault kinds every workload takes, in a fixed order
// (not clock_skew, which only the cache workload has).
func Kinds() []Kind {
	return []Kind{FaultLatency, FaultTimeout, FaultResetPeer, FaultSlowClose, FaultBandwidth,
		FaultPause, FaultRestart, FaultSnapshot, FaultClientPause}
}

// Fault is one scheduled fault: Kind on server Node (-1 for client_pause
// and clock_skew) from At to At+For after the run's start.
type Fault struct {
	Kind Kind          `json:"kind"`
	Node int           `json:"node"`
	At   time.Duration `json:"at_ns"`
	For  time.Duration `json:"for_ns"`
}

func (f Fault) String() string {
	return fmt.Sprintf("%s node %d at %v for %v", f.Kind, f.Node, f.At.Round(time.Millisecond), f.For.Round(time.Millisecond))
}

// NewSchedule returns the faults of a run of length d on nodes servers:
// one starts every 0.3 to 1.5 s and lasts 0.3 to 2 s, of one of kinds (nil:
// Kinds()) and on a server drawn at random, never two at once on one
// server, and none in the last 2 s so the run ends healthy. The same
// arguments give the same schedule.
func NewSchedule(seed uint64, d time.Duration, nodes int, kinds []Kind) []Fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if kinds == nil {
		kinds = Kinds()
	}
	busy := make([]time.Duration, nodes)
	var out []Fault
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	for at := between(300*time.Millisecond, 1500*time.Millisecond); ; at += between(300*time.Millisecond, 1500*time.Millisecond) {
		f := Fault{Kind: kinds[r.IntN(len(kinds))], Node: r.IntN(nodes), At: at, For: between(300*time.Millisecond, 2*time.Second)}
		if f.At+f.For > d-2*time.Second {
			return out
		}
		if f.Kind == FaultClientPause || f.Kind == FaultClockSkew {
			f.Node = -1
		} else if busy[f.Node] > f.At {
			continue
		} else {
			busy[f.Node] = f.At + f.For
		}
		out = append(out, f)
	}
}

// target is a family of faults of the reserve workload: one of kinds on
// one of nodes, lasting minFor to maxFor, drawn weight times as often as a
// family of weight 1.
type target struct {
	kinds          []Kind
	nodes          []int
	minFor, maxFor time.Duration
	weight         int
}

// newTargetSchedule returns the faults of a run of length d: one starts
// every 0.3 to 1.5 s, of a family drawn from targets by weight, then a kind and a
// node of that family; never two at once on one node (-1, the clients,
// excepted), and none in the last quiet of the run. The same arguments give
// the same schedule.
func newTargetSchedule(seed uint64, d, quiet time.Duration, targets []target) []Fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	busy := map[int]time.Duration{}
	var out []Fault
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	for at := between(300*time.Millisecond, 1500*time.Millisecond); ; at += between(300*time.Millisecond, 1500*time.Millisecond) {
		t := drawTarget(r, targets)
		f := Fault{Kind: t.kinds[r.IntN(len(t.kinds))], Node: t.nodes[r.IntN(len(t.nodes))], At: at, For: between(t.minFor, t.maxFor)}
		if f.At+f.For > d-quiet {
			if at > d-quiet {
				return out
			}
			continue
		}
		if f.Node >= 0 && busy[f.Node] > f.At {
			continue
		}
		busy[f.Node] = f.At + f.For
		out = append(out, f)
	}
}

// drawTarget draws one of targets, each as often as its weight says.
func drawTarget(r *rand.Rand, targets []target) target {
	total := 0
	for _, t := range targets {
		total += t.weight
	}
	n := r.IntN(total)
	for _, t := range targets {
		if n -= t.weight; n < 0 {
			return t
		}
	}
	panic("unreachable")
}
