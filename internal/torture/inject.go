package torture

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// FaultRecord is a fault as it happened: when it began and ended, and the
// error if it could not be applied.
type FaultRecord struct {
	Fault
	Began time.Time `json:"began"`
	Ended time.Time `json:"ended"`
	Err   string    `json:"error,omitempty"`
}

// injector applies faults to the servers, their proxies and the clients.
type injector struct {
	env         *Env
	nodes       []*testenv.RedisNode
	px          *proxies
	clientPause atomic.Int32 // > 0 while a client_pause fault is on
	// onClientPause, if set, is told when client pauses start and stop
	// (the reserve workload turns the API's pause knob).
	onClientPause func(on bool)
	// onClockSkew, if set, is told when a clock_skew fault starts and stops.
	onClockSkew func(on bool)
	// apis are the reserve workload's API processes, nodes apiNode and up:
	// pause stops one (SIGSTOP), restart kills it (SIGKILL) and starts it
	// again at the end.
	apis    []*apiProcess
	apiNode int
	// latency overrides the latency toxic's attributes by node (the
	// database's is slower than a Redis's).
	latency map[int]string
	// terminate, for terminate faults, ends every database session of the
	// run; it runs every 300 ms while the fault lasts.
	terminate   func(context.Context) error
	terminating map[int]context.CancelFunc
	// rowLock, for row_lock faults on API node n, blocks activations and
	// slows that instance's database; the func it returns undoes both.
	rowLock  func(n int) (undo func() error, err error)
	rowLocks map[int]func() error
}

// api returns the API process that is node n, nil if n is not one.
func (in *injector) api(n int) *apiProcess {
	if i := n - in.apiNode; in.apis != nil && i >= 0 && i < len(in.apis) {
		return in.apis[i]
	}
	return nil
}

// beginTerminating runs in.terminate now and every 300 ms until the fault
// on node n ends.
func (in *injector) beginTerminating(n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	if in.terminating == nil {
		in.terminating = map[int]context.CancelFunc{}
	}
	in.terminating[n] = cancel
	err := in.terminate(ctx)
	go func() {
		t := time.NewTicker(300 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = in.terminate(ctx)
			}
		}
	}()
	return err
}

// beginRowLock starts a row_lock fault on node n; its end undoes it.
func (in *injector) beginRowLock(n int) error {
	if in.rowLock == nil {
		return errors.New("row_lock: not a fault of this workload")
	}
	undo, err := in.rowLock(n)
	if in.rowLocks == nil {
		in.rowLocks = map[int]func() error{}
	}
	in.rowLocks[n] = undo
	return err
}

func (in *injector) begin(f Fault) error {
	if f.Kind == FaultRowLock {
		return in.beginRowLock(f.Node)
	}
	if a := in.api(f.Node); a != nil {
		if f.Kind == FaultRestart {
			return a.kill()
		}
		return a.pause()
	}
	switch f.Kind {
	case FaultLatency:
		attrs, ok := in.latency[f.Node]
		if !ok {
			attrs = `{"latency": 150, "jitter": 50}`
		}
		return in.px.toxic(f.Node, "latency", "latency", "downstream", attrs)
	case FaultTerminate:
		return in.beginTerminating(f.Node)
	case FaultTimeout:
		return in.px.toxic(f.Node, "timeout", "timeout", "upstream", `{"timeout": 0}`)
	case FaultResetPeer:
		return in.px.toxic(f.Node, "reset", "reset_peer", "upstream", `{"timeout": 0}`)
	case FaultSlowClose:
		return in.px.toxic(f.Node, "slow_close", "slow_close", "downstream", `{"delay": 500}`)
	case FaultBandwidth:
		return in.px.toxic(f.Node, "bandwidth", "bandwidth", "downstream", `{"rate": 1}`)
	case FaultPause:
		return in.env.Setup(in.nodes[f.Node].Pause)
	case FaultSnapshot:
		return in.env.Setup(in.nodes[f.Node].Snapshot)
	case FaultClientPause:
		if in.clientPause.Add(1) == 1 && in.onClientPause != nil {
			in.onClientPause(true)
		}
	case FaultClockSkew:
		if in.onClockSkew != nil {
			in.onClockSkew(true)
		}
	}
	return nil
}

func (in *injector) end(f Fault) error {
	if f.Kind == FaultRowLock {
		undo := in.rowLocks[f.Node]
		delete(in.rowLocks, f.Node)
		if undo == nil {
			return nil
		}
		return undo()
	}
	if a := in.api(f.Node); a != nil {
		if f.Kind == FaultRestart {
			return a.restart()
		}
		return a.resume()
	}
	switch f.Kind {
	case FaultTerminate:
		in.terminating[f.Node]()
	case FaultPause:
		return in.env.Setup(in.nodes[f.Node].Resume)
	case FaultRestart:
		return in.env.Setup(in.nodes[f.Node].Restart)
	case FaultSnapshot:
		return in.env.Setup(in.nodes[f.Node].RestartFromSnapshot)
	case FaultClientPause:
		if in.clientPause.Add(-1) == 0 && in.onClientPause != nil {
			in.onClientPause(false)
		}
	case FaultClockSkew:
		if in.onClockSkew != nil {
			in.onClockSkew(false)
		}
	default:
		in.px.clear(f.Node)
	}
	return nil
}

// run applies the schedule from start until it is done or ctx ends, and
// returns what happened. A fault whose start passed when ctx ended is ended
// too, so the servers are left healthy.
func (in *injector) run(ctx context.Context, start time.Time, faults []Fault) []FaultRecord {
	type event struct {
		at    time.Duration
		i     int
		begin bool
	}
	var evs []event
	for i, f := range faults {
		evs = append(evs, event{f.At, i, true}, event{f.At + f.For, i, false})
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })
	recs := make([]FaultRecord, len(faults))
	for i, f := range faults {
		recs[i].Fault = f
	}
	for _, ev := range evs {
		r := &recs[ev.i]
		if !ev.begin && r.Began.IsZero() {
			continue
		}
		if ev.begin {
			select {
			case <-ctx.Done():
				continue
			case <-time.After(time.Until(start.Add(ev.at))):
			}
			r.Began = time.Now()
			if err := in.begin(r.Fault); err != nil {
				r.Err = err.Error()
			}
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(ev.at))):
		}
		if err := in.end(r.Fault); err != nil && r.Err == "" {
			r.Err = err.Error()
		}
		r.Ended = time.Now()
	}
	return recs
}
