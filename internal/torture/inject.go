package torture

import (
	"context"
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
}

func (in *injector) begin(f Fault) error {
	switch f.Kind {
	case FaultLatency:
		return in.px.toxic(f.Node, "latency", "latency", "downstream", `{"latency": 150, "jitter": 50}`)
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
	switch f.Kind {
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
