package scenario

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// Defaults of the shared flags, also shown by -h.
const (
	defaultTarget       = "http://127.0.0.1:8080"
	defaultRate         = 50.0
	defaultDuration     = 30 * time.Second
	defaultMaxInFlight  = 256
	defaultMetricsAddr  = "127.0.0.1:9102"
	defaultMaxErrorRate = 0.01
)

// ReplotCommand is the pseudo-scenario that renders a report directory's
// report.md and charts again from its summary.json.
const ReplotCommand = "replot"

// ErrNoScenario is returned by ParseArgs when no known scenario was named.
var ErrNoScenario = errors.New("name a scenario: stampede, browse, reserve, lostlock, capacity, demo, near (or replot)")

// Config is the command line every scenario shares: the targets, the
// open-model load, the admin token, the report, and the flag groups read by
// more than one scenario.
type Config struct {
	Targets      []*url.URL
	AllowRemote  bool
	MetricsAddr  string
	Rate         float64
	Duration     time.Duration
	MaxRequests  int64
	MaxInFlight  int
	AdminToken   string
	ReportDir    string // "": a new scratch directory per run
	MaxErrorRate float64
	PauseDemo    *url.URL // a running demo's -metrics-addr to pause during the run; nil: none
	TraceSample  float64  // fraction of requests whose traceparent is flagged sampled
	JaegerURL    string   // Jaeger query service for trace links and waterfalls; "": none
	Conditions   string   // a label for how busy the machine was, recorded in the summary; "": none (the measured Machine is recorded regardless)

	HotKeys HotKeys      // stampede, demo
	Mix     Mix          // browse, demo
	Reserve Reservations // reserve, lostlock, demo
}

// register adds the shared flags to fs. getenv supplies the fallbacks
// LOADGEN_TARGET, LOADGEN_METRICS_ADDR, LOADGEN_CONDITIONS, ADMIN_TOKEN and
// JAEGER_URL (make run-local writes all but LOADGEN_CONDITIONS to .run/env).
func (c *Config) register(fs *flag.FlagSet, target, pauseDemo, jaeger *string, getenv func(string) string) {
	targetDefault := defaultTarget
	if v := getenv("LOADGEN_TARGET"); v != "" {
		targetDefault = v
	}
	fs.StringVar(target, "target", targetDefault,
		"base URL of the stampede API, or several replicas' URLs comma-separated (load is spread round robin, admin changes go to all); the only hosts loadgen talks to (env LOADGEN_TARGET: make run-local writes its API's to .run/env)")
	metricsDefault := defaultMetricsAddr
	if v := getenv("LOADGEN_METRICS_ADDR"); v != "" {
		metricsDefault = v
	}
	fs.StringVar(&c.MetricsAddr, "metrics-addr", metricsDefault,
		"listen address of loadgen's own /metrics (and, for demo, /demo/pause and /demo/resume); empty disables it (env LOADGEN_METRICS_ADDR: make run-local writes the address its Prometheus scrapes to .run/env)")
	fs.BoolVar(&c.AllowRemote, "allow-remote", false,
		"allow a -target that is not loopback (127.0.0.0/8, ::1, localhost); default off, so load never leaves the machine by accident")
	fs.Float64Var(&c.Rate, "rate", defaultRate,
		"target arrival rate in requests per second; requests start on schedule whether or not earlier ones finished (capacity: the first step's rate)")
	fs.DurationVar(&c.Duration, "duration", defaultDuration,
		"how long to generate load (0 = no time bound; then -max-requests must be set, except for demo)")
	fs.Int64Var(&c.MaxRequests, "max-requests", 0,
		"stop after this many scheduled requests, dropped ones included (default 0: no count bound)")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", defaultMaxInFlight,
		"safety cap on concurrent requests; an arrival that finds the cap reached is dropped and counted, not queued")
	fs.StringVar(&c.AdminToken, "admin-token", getenv("ADMIN_TOKEN"),
		"bearer token of the API's /admin endpoints, needed to switch cache strategies, reservation modes and fault knobs (env ADMIN_TOKEN)")
	fs.StringVar(&c.ReportDir, "report-dir", "",
		"where stampede, browse, reserve, lostlock, capacity and near write summary.json, report.md and the PNG charts (default: a new scratch directory, printed at the end)")
	fs.Float64Var(&c.MaxErrorRate, "max-error-rate", defaultMaxErrorRate,
		"browse, and stampede's xfetch phases: fail when more than this share of the requests sent failed (errors / sent; arrivals dropped at -max-in-flight, the machine not keeping up, are reported, not bounded); reserve, lostlock: when (errors + dropped) / scheduled exceeds it; capacity: a step whose (errors + dropped) / scheduled exceeds it fails and ends the class's ramp")
	fs.StringVar(pauseDemo, "pause-demo", "",
		"base URL of a running demo's -metrics-addr (e.g. http://127.0.0.1:9102): pause it for this run and resume it after, so it does not change the API's settings under the run")
	fs.Float64Var(&c.TraceSample, "trace-sample", 1,
		"fraction (0..1) of requests whose W3C traceparent header is flagged sampled, so that the API (parent-based sampler) records their traces; the others carry a traceparent flagged 00. Every request but the /metrics scrapes carries a fresh random trace id")
	fs.StringVar(jaeger, "jaeger-url", getenv("JAEGER_URL"),
		"base URL of a Jaeger query service (e.g. http://127.0.0.1:16686; make run-local writes its Jaeger's to .run/env): the report links the slowest sampled requests' trace ids to its UI, and after the run loadgen reads the slowest trace of each phase from it (GET /api/traces/ID, for up to 15s) and draws it as trace-PHASE.png; loopback only unless -allow-remote (env JAEGER_URL; default: bare trace ids, no waterfall)")
	fs.StringVar(&c.Conditions, "conditions", getenv("LOADGEN_CONDITIONS"),
		"a label for how busy the machine was during the run, e.g. \"busy: 2 CPU hogs\" (make experiments-busy) or \"quiet\"; written to summary.json and the report's introduction (env LOADGEN_CONDITIONS). Without it the report still records what loadgen measures: the CPUs, GOMAXPROCS and the load average at the start and end")
	c.HotKeys.register(fs)
	c.Mix.register(fs)
	c.Reserve.register(fs)
}

// validate checks the shared flags; target, pauseDemo and jaeger are
// -target, -pause-demo and -jaeger-url as given.
func (c *Config) validate(target, pauseDemo, jaeger string) error {
	if pauseDemo != "" {
		u, err := loadgen.ParseTarget(pauseDemo, c.AllowRemote)
		if err != nil {
			return fmt.Errorf("-pause-demo: %w", err)
		}
		c.PauseDemo = u
	}
	c.JaegerURL = ""
	if jaeger != "" {
		u, err := loadgen.ParseTarget(jaeger, c.AllowRemote)
		if err != nil {
			return fmt.Errorf("-jaeger-url: %w", err)
		}
		u.RawQuery, u.Fragment = "", ""
		c.JaegerURL = strings.TrimSuffix(u.String(), "/")
	}
	c.Targets = nil
	for _, raw := range splitList(target) {
		u, err := loadgen.ParseTarget(raw, c.AllowRemote)
		if err != nil {
			return err
		}
		c.Targets = append(c.Targets, u)
	}
	switch {
	case len(c.Targets) == 0:
		return errors.New("-target is empty")
	case !validRate(c.Rate):
		return fmt.Errorf("-rate must be in [%g, %g], got %v", loadgen.MinRate, loadgen.MaxRate, c.Rate)
	case c.Duration < 0:
		return fmt.Errorf("-duration must be >= 0, got %v", c.Duration)
	case c.MaxRequests < 0:
		return fmt.Errorf("-max-requests must be >= 0, got %d", c.MaxRequests)
	case c.MaxInFlight <= 0:
		return fmt.Errorf("-max-in-flight must be > 0, got %d", c.MaxInFlight)
	case !(c.MaxErrorRate >= 0 && c.MaxErrorRate <= 1):
		return fmt.Errorf("-max-error-rate must be in [0, 1], got %v", c.MaxErrorRate)
	case !(c.TraceSample >= 0 && c.TraceSample <= 1):
		return fmt.Errorf("-trace-sample must be in [0, 1], got %v", c.TraceSample)
	}
	return errors.Join(c.HotKeys.validate(), c.Mix.validate(), c.Reserve.validate())
}

// validRate reports whether r is a rate a Runner accepts.
func validRate(r float64) bool { return r >= loadgen.MinRate && r <= loadgen.MaxRate }

// bounded reports an error when the load would never stop by itself.
func (c *Config) bounded() error {
	if c.Duration == 0 && c.MaxRequests == 0 {
		return errors.New("-duration and -max-requests are both 0: the run would never stop by itself (only demo may run until stopped)")
	}
	return nil
}

// needAdmin reports an error when the scenario (what) needs the admin API
// and no token was given.
func (c *Config) needAdmin(what string) error {
	if c.AdminToken == "" {
		return fmt.Errorf("%s switches the API's settings: it needs -admin-token (or ADMIN_TOKEN)", what)
	}
	return nil
}

// ParseArgs parses loadgen's command line: the shared flags, every
// scenario's flags and at most one scenario name. It returns the scenario
// (nil for replot, whose directory is cfg.ReportDir), the shared config and
// the name given. Usage and flag errors go to usage; -h yields
// flag.ErrHelp. Nothing connects anywhere.
func ParseArgs(args []string, getenv func(string) string, usage io.Writer) (Scenario, *Config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(usage)
	cfg := &Config{}
	var target, pauseDemo, jaeger string
	cfg.register(fs, &target, &pauseDemo, &jaeger, getenv)
	all := All(cfg, getenv)
	for _, s := range all {
		s.register(fs)
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		for _, s := range all {
			fmt.Fprintf(fs.Output(), "  %-9s %s\n", s.Name(), strings.ReplaceAll(s.Usage(), "\n", "\n            "))
		}
		fmt.Fprint(fs.Output(), usageTail)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 1 {
		return nil, nil, fmt.Errorf("at most one scenario, got %q", fs.Args())
	}
	if err := cfg.validate(target, pauseDemo, jaeger); err != nil {
		return nil, nil, err
	}
	name := fs.Arg(0)
	if name == ReplotCommand {
		if cfg.ReportDir == "" {
			return nil, nil, errors.New("replot: name the report directory with -report-dir")
		}
		return nil, cfg, nil
	}
	for _, s := range all {
		if s.Name() == name {
			return s, cfg, s.check()
		}
	}
	return nil, nil, ErrNoScenario
}

const usageHead = `Usage: loadgen [flags] scenario

Open-model load generator for the stampede API. Requests start on a fixed
schedule at -rate whether or not earlier ones finished, and latency is
measured from each request's scheduled start, so a slow server cannot hide
its queueing delay. A progress line is shown once a second.

Scenarios:
`

const usageTail = `
Every scenario but demo writes summary.json, report.md and PNG charts to
-report-dir (a scratch directory unless given) and exits non-zero when its
verdict fails. "loadgen -report-dir DIR replot" renders report.md and the
charts again from DIR/summary.json, without sending any request.

Every request (admin calls included, /metrics scrapes not) carries a W3C
traceparent with a fresh random trace id, flagged sampled for -trace-sample
of them. The report lists, per phase, the trace ids of the 5 slowest sampled
requests: links to the Jaeger UI with -jaeger-url, which also draws the
slowest trace of each phase as a waterfall (trace-PHASE.png). A trace that
cannot be read from Jaeger is a warning in the report, not a failed run.

Flags:
`
