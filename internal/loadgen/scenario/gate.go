package scenario

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// gate is the demo's pause switch, served on loadgen's own listener. Pauses
// are counted: POST /demo/pause adds one and answers once the demo is quiet
// (it sends nothing and holds no reservation), POST /demo/resume takes one
// away, and the demo runs again at zero, so an operator's pause and the
// pauses of overlapping -pause-demo runs do not undo each other. GET /demo
// says {"paused", "quiet", "pauses"}. loadgen_demo_paused is 1 while paused.
type gate struct {
	mu     sync.Mutex
	pauses int
	quiet  bool
	change chan struct{} // closed and replaced on every change
	gauge  prometheus.Gauge
}

// quietWait bounds how long POST /demo/pause waits for the demo to settle.
const quietWait = 2 * time.Minute

// newGate registers the gate's endpoints and gauge on e.
func newGate(e *Env) (*gate, error) {
	g := &gate{quiet: true, change: make(chan struct{}), gauge: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "loadgen_demo_paused",
		Help: "1 while the demo is paused (POST /demo/pause on loadgen's listener), 0 while it runs.",
	})}
	if err := e.registry.Register(g.gauge); err != nil {
		return nil, err
	}
	e.mux.HandleFunc("POST /demo/pause", func(w http.ResponseWriter, r *http.Request) {
		g.update(func() { g.pauses++ })
		ctx, cancel := context.WithTimeout(r.Context(), quietWait)
		defer cancel()
		g.until(ctx, func() bool { return g.pauses > 0 && g.quiet })
		g.serve(w)
	})
	e.mux.HandleFunc("POST /demo/resume", func(w http.ResponseWriter, r *http.Request) {
		g.update(func() { g.pauses = max(0, g.pauses-1) })
		g.serve(w)
	})
	e.mux.HandleFunc("GET /demo", func(w http.ResponseWriter, r *http.Request) { g.serve(w) })
	return g, nil
}

// update changes the gate's state under its lock and wakes its waiters.
func (g *gate) update(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
	close(g.change)
	g.change = make(chan struct{})
	if g.pauses > 0 {
		g.gauge.Set(1)
	} else {
		g.gauge.Set(0)
	}
}

// until blocks until cond (read under the lock) holds; false when ctx ended.
func (g *gate) until(ctx context.Context, cond func() bool) bool {
	for {
		g.mu.Lock()
		ok, change := cond(), g.change
		g.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-change:
		case <-ctx.Done():
			return false
		}
	}
}

// serve answers the gate's state.
func (g *gate) serve(w http.ResponseWriter) {
	g.mu.Lock()
	st := map[string]any{"paused": g.pauses > 0, "quiet": g.quiet, "pauses": g.pauses}
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// running blocks until no pause is in force and marks the demo busy; false
// when ctx ended.
func (g *gate) running(ctx context.Context) bool {
	if !g.until(ctx, func() bool { return g.pauses == 0 }) || ctx.Err() != nil {
		return false
	}
	g.update(func() { g.quiet = false })
	return true
}

// untilPaused blocks until a pause is asked for or ctx ends.
func (g *gate) untilPaused(ctx context.Context) {
	g.until(ctx, func() bool { return g.pauses > 0 })
}

// settled marks the demo quiet: its traffic stopped and its holds released.
func (g *gate) settled() { g.update(func() { g.quiet = true }) }
