package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// requestTimeout bounds every request loadgen sends.
const requestTimeout = 30 * time.Second

// Env is what a scenario runs in: the shared config, one client per target,
// the client-side stats behind the progress line and loadgen's /metrics, the
// slowest sampled requests per phase for the report, and the output
// streams.
type Env struct {
	cfg      *Config
	targets  loadgen.Targets
	stats    *loadgen.Stats
	metrics  *loadgen.Metrics
	slowest  *loadgen.Slowest
	clock    loadgen.Clock        // paces the wait for Jaeger; nil: the real clock
	registry *prometheus.Registry // loadgen's own /metrics
	mux      *http.ServeMux       // loadgen's own endpoints on -metrics-addr
	stdout   io.Writer
	stderr   io.Writer
}

// Run runs s with cfg: it serves loadgen's /metrics on cfg.MetricsAddr (when
// set) and shows progress on stderr while s runs, and stops both before
// returning s's verdict.
func Run(ctx context.Context, s Scenario, cfg *Config, stdout, stderr io.Writer) (err error) {
	stderr = &syncWriter{w: stderr} // the progress line and the scenario's log lines share it
	targets, err := loadgen.NewTargets(cfg.Targets, requestTimeout, cfg.TraceSample)
	if err != nil {
		return err
	}
	defer targets.CloseIdleConnections()
	reg := prometheus.NewRegistry()
	metrics, err := loadgen.NewMetrics(reg)
	if err != nil {
		return err
	}
	e := &Env{cfg: cfg, targets: targets, stats: loadgen.NewStats(nil), metrics: metrics, registry: reg,
		slowest: loadgen.NewSlowest(slowestPerPhase), mux: http.NewServeMux(), stdout: stdout, stderr: stderr}
	e.mux.Handle("GET /metrics", metrics.Handler())
	if cfg.MetricsAddr != "" {
		stop, err := serve(cfg.MetricsAddr, e.mux, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	if cfg.PauseDemo != nil && s.Name() != "demo" {
		resume, err := pauseDemo(ctx, cfg.PauseDemo)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, resume()) }()
	}
	stopProgress := loadgen.StartProgress(e.stats, stderr, loadgen.IsTerminal(stderr), time.Second)
	err = s.Run(ctx, e)
	stopProgress()
	return err
}

// pauseDemo pauses the demo whose listener is at u and returns the function
// that resumes it (with a fresh context: the run's may be cancelled).
func pauseDemo(ctx context.Context, u *url.URL) (resume func() error, err error) {
	c, err := loadgen.NewClient(u.String(), quietWait+30*time.Second) // a pause answers once the demo settled
	if err != nil {
		return nil, err
	}
	post := func(ctx context.Context, path string) (paused, quiet bool, err error) {
		out, data := c.PostJSON(ctx, "demo", path, struct{}{}, nil, nil)
		if out.Err != nil {
			return false, false, fmt.Errorf("-pause-demo: POST %s%s: %w", u, path, out.Err)
		}
		var st struct{ Paused, Quiet bool }
		if err := json.Unmarshal(data, &st); err != nil {
			return false, false, fmt.Errorf("-pause-demo: POST %s%s: not a demo's answer: %w", u, path, err)
		}
		return st.Paused, st.Quiet, nil
	}
	paused, quiet, err := post(ctx, "/demo/pause")
	if err != nil {
		return nil, err
	}
	if !paused || !quiet {
		_, _, _ = post(context.WithoutCancel(ctx), "/demo/resume")
		return nil, fmt.Errorf("-pause-demo: %s did not pause and settle (paused %v, quiet %v)", u, paused, quiet)
	}
	return func() error {
		defer c.CloseIdleConnections()
		_, _, err := post(context.WithoutCancel(ctx), "/demo/resume")
		return err
	}, nil
}

// observe records a Runner result of scenario for the progress line and
// loadgen's /metrics.
func (e *Env) observe(scenario string, res loadgen.Result) {
	e.stats.ObserveResult(scenario, res)
	e.metrics.Observe(scenario, res)
}

// reportDir returns -report-dir, or a new scratch directory for scenario.
func (e *Env) reportDir(scenario string) (string, error) {
	if e.cfg.ReportDir != "" {
		return e.cfg.ReportDir, nil
	}
	return os.MkdirTemp("", "loadgen-"+scenario+"-")
}

// serve serves h on addr until the returned function is called. It fails
// at once if addr cannot be listened on.
func serve(addr string, h http.Handler, log io.Writer) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
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

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
