package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// env is what every scenario shares: the parsed flags, the targets, the
// client-side stats behind the progress line and the /metrics endpoint,
// and the output streams.
type env struct {
	cfg     config
	targets Targets
	stats   *Stats
	metrics *Metrics
	stdout  io.Writer
	stderr  io.Writer
}

// newEnv builds the environment of one run. Nothing is started yet.
func newEnv(cfg config, stdout, stderr io.Writer) (*env, error) {
	targets, err := NewTargets(cfg.targets, 30*time.Second)
	if err != nil {
		return nil, err
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	return &env{cfg: cfg, targets: targets, stats: NewStats(nil), metrics: metrics, stdout: stdout, stderr: stderr}, nil
}

// run serves /metrics (when -metrics-addr is set) and shows progress while
// scenario runs, and stops both before returning scenario's error.
func (e *env) run(ctx context.Context, scenario func(context.Context, *env) error) error {
	defer e.targets.CloseIdleConnections()
	if e.cfg.metricsAddr != "" {
		stop, err := serveMetrics(e.cfg.metricsAddr, e.metrics.Handler(), e.stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	stopProgress := startProgress(e.stats, e.stderr, isTerminal(e.stderr), time.Second)
	err := scenario(ctx, e)
	stopProgress()
	return err
}

// observe records a Runner result of scenario for the progress line and
// the /metrics endpoint.
func (e *env) observe(scenario string, res Result) {
	e.stats.ObserveResult(scenario, res)
	e.metrics.Observe(scenario, res)
}

// serveMetrics serves h at /metrics on addr until the returned function is
// called. It fails at once if addr cannot be listened on.
func serveMetrics(addr string, h http.Handler, log io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(log, "loadgen: metrics server:", err)
		}
	}()
	fmt.Fprintf(log, "loadgen: metrics on http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// isTerminal reports whether w is a character device (a terminal), where
// the progress line is redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// startProgress writes a progress line to w every interval until the
// returned function is called (idempotent; it waits for the writer to stop).
// On a terminal the line is redrawn in place and ended with a newline when
// stopped; otherwise each is a log line of its own.
func startProgress(stats *Stats, w io.Writer, terminal bool, interval time.Duration) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		drawn := false
		for {
			select {
			case <-t.C:
				line := FormatProgress(stats.Snapshot())
				if terminal {
					fmt.Fprint(w, "\r\x1b[K"+line)
					drawn = true
				} else {
					fmt.Fprintln(w, "loadgen:", line)
				}
			case <-done:
				if drawn {
					fmt.Fprintln(w)
				}
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}
