package scenario

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// gate is the demo's pause switch, served on loadgen's own listener:
// POST /demo/pause, POST /demo/resume, GET /demo. Its state is the gauge
// loadgen_demo_paused.
type gate struct {
	mu      sync.Mutex
	stopped bool
	change  chan struct{} // closed and replaced on every change
	gauge   prometheus.Gauge
}

// newGate registers the gate's endpoints and gauge on e.
func newGate(e *Env) (*gate, error) {
	g := &gate{change: make(chan struct{}), gauge: prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "loadgen_demo_paused",
		Help: "1 while the demo is paused (POST /demo/pause on loadgen's listener), 0 while it runs.",
	})}
	if err := e.registry.Register(g.gauge); err != nil {
		return nil, err
	}
	e.mux.HandleFunc("POST /demo/pause", func(w http.ResponseWriter, r *http.Request) { g.set(true); g.serve(w) })
	e.mux.HandleFunc("POST /demo/resume", func(w http.ResponseWriter, r *http.Request) { g.set(false); g.serve(w) })
	e.mux.HandleFunc("GET /demo", func(w http.ResponseWriter, r *http.Request) { g.serve(w) })
	return g, nil
}

func (g *gate) set(paused bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped == paused {
		return
	}
	g.stopped = paused
	close(g.change)
	g.change = make(chan struct{})
	if paused {
		g.gauge.Set(1)
	} else {
		g.gauge.Set(0)
	}
}

// serve answers the gate's state as {"paused": bool}.
func (g *gate) serve(w http.ResponseWriter) {
	g.mu.Lock()
	paused := g.stopped
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]bool{"paused": paused})
}

// wait blocks while the gate is paused; false when ctx ended.
func (g *gate) wait(ctx context.Context) bool {
	for {
		g.mu.Lock()
		paused, change := g.stopped, g.change
		g.mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
		if !paused {
			return true
		}
		select {
		case <-change:
		case <-ctx.Done():
			return false
		}
	}
}

// untilPaused blocks until the gate is paused or ctx ends.
func (g *gate) untilPaused(ctx context.Context) {
	for {
		g.mu.Lock()
		paused, change := g.stopped, g.change
		g.mu.Unlock()
		if paused {
			return
		}
		select {
		case <-change:
		case <-ctx.Done():
			return
		}
	}
}
