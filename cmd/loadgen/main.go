// Command loadgen drives the stampede API with open-model load and measures
// client latency from each request's scheduled start (no coordinated
// omission).
//
//	loadgen [flags] scenario
//
// Scenarios: stampede, browse, reserve and demo (see -h). It only ever talks
// to the -target URLs, which must be loopback addresses unless -allow-remote
// is given, serves its own /metrics on -metrics-addr, shows a progress line
// once a second, and writes a report directory at the end of every scenario
// but demo. `loadgen -h` lists every flag with its default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// Flag defaults, also shown by -h.
const (
	defaultTarget      = "http://127.0.0.1:8080"
	defaultRate        = 50.0
	defaultDuration    = 30 * time.Second
	defaultMaxRequests = 0
	defaultMaxInFlight = 256
	defaultMetricsAddr = "127.0.0.1:9102"
)

// errNoScenario is returned by run when no known scenario was named.
var errNoScenario = errors.New("name a scenario: stampede, browse, reserve, lostlock or demo")

// ErrRemoteTarget is returned (wrapped) when the target is not a loopback
// address and -allow-remote was not given.
var ErrRemoteTarget = errors.New("target is not a loopback address (127.0.0.0/8, ::1 or localhost); pass -allow-remote to load another host")

// config is the parsed and validated command line.
type config struct {
	targets     []*url.URL
	allowRemote bool
	metricsAddr string
	rate        float64
	duration    time.Duration
	maxRequests int64
	maxInFlight int
	scenario    string
	stampede    stampedeConfig
	reserve     reserveConfig
	lostLock    lostLockConfig
	browse      browseConfig
	demo        demoConfig
}

// run is the whole program: it parses args (with LOADGEN_TARGET from getenv
// as the -target fallback and ADMIN_TOKEN as the -admin-token one), validates
// them and runs the scenario. -h prints usage to stderr and returns nil. It
// never opens a network connection before the targets have been validated.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.scenario == replotCommand {
		return replot(cfg.stampede.reportDir, stdout)
	}
	var scenario func(context.Context, *env) error
	switch cfg.scenario {
	case stampedeScenario:
		scenario = runStampede
	case browseScenario:
		scenario = runBrowse
	case reserveScenario:
		scenario = runReserve
	case demoScenario:
		scenario = runDemo
	case lostLockScenario:
		scenario = runLostLock
	default:
		return errNoScenario
	}
	e, err := newEnv(cfg, stdout, stderr)
	if err != nil {
		return err
	}
	return e.run(ctx, scenario)
}

// parseConfig parses and validates the command line. Usage and flag errors
// are written to stderr; -h yields flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	targetDefault := defaultTarget
	if v := getenv("LOADGEN_TARGET"); v != "" {
		targetDefault = v
	}
	var (
		cfg    config
		target string
	)
	fs.StringVar(&target, "target", targetDefault,
		"base URL of the stampede API, or several replicas' URLs comma-separated (load is spread round robin, admin changes go to all); the only hosts loadgen talks to (env LOADGEN_TARGET)")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", defaultMetricsAddr,
		"listen address of loadgen's own /metrics (loadgen_requests_total, loadgen_request_duration_seconds); empty disables it")
	fs.BoolVar(&cfg.allowRemote, "allow-remote", false,
		"allow a -target that is not loopback (127.0.0.0/8, ::1, localhost); default off, so load never leaves the machine by accident")
	fs.Float64Var(&cfg.rate, "rate", defaultRate,
		"target arrival rate in requests per second; requests start on schedule whether or not earlier ones finished")
	fs.DurationVar(&cfg.duration, "duration", defaultDuration,
		"how long to generate load (0 = no time bound; then -max-requests must be set)")
	fs.Int64Var(&cfg.maxRequests, "max-requests", defaultMaxRequests,
		"stop after this many scheduled requests, dropped ones included (default 0: no count bound)")
	fs.IntVar(&cfg.maxInFlight, "max-in-flight", defaultMaxInFlight,
		"safety cap on concurrent requests; an arrival that finds the cap reached is dropped and counted, not queued")
	registerStampedeFlags(fs, &cfg.stampede, getenv("ADMIN_TOKEN"))
	registerReserveFlags(fs, &cfg.reserve)
	registerLostLockFlags(fs, &cfg.lostLock)
	registerBrowseFlags(fs, &cfg.browse)
	registerDemoFlags(fs, &cfg.demo)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 1 {
		return config{}, fmt.Errorf("at most one scenario, got %q", fs.Args())
	}
	cfg.scenario = fs.Arg(0)

	for _, raw := range strings.Split(target, ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		u, err := validateTarget(raw, cfg.allowRemote)
		if err != nil {
			return config{}, err
		}
		cfg.targets = append(cfg.targets, u)
	}
	if len(cfg.targets) == 0 {
		return config{}, errors.New("-target is empty")
	}
	switch {
	case !(cfg.rate > 0):
		return config{}, fmt.Errorf("-rate must be > 0, got %v", cfg.rate)
	case cfg.duration < 0:
		return config{}, fmt.Errorf("-duration must be >= 0, got %v", cfg.duration)
	case cfg.maxRequests < 0:
		return config{}, fmt.Errorf("-max-requests must be >= 0, got %d", cfg.maxRequests)
	case cfg.duration == 0 && cfg.maxRequests == 0 && cfg.scenario != demoScenario:
		return config{}, errors.New("-duration and -max-requests are both 0: the run would never stop by itself (only demo may run until stopped)")
	case cfg.maxInFlight <= 0:
		return config{}, fmt.Errorf("-max-in-flight must be > 0, got %d", cfg.maxInFlight)
	}
	if err := cfg.stampede.validate(); err != nil {
		return config{}, err
	}
	if err := cfg.reserve.validate(); err != nil {
		return config{}, err
	}
	if err := cfg.lostLock.validate(); err != nil {
		return config{}, err
	}
	if err := cfg.browse.validate(); err != nil {
		return config{}, err
	}
	if err := cfg.demo.validate(); err != nil {
		return config{}, err
	}
	needAdmin := cfg.scenario == stampedeScenario || cfg.scenario == demoScenario || cfg.scenario == lostLockScenario ||
		(cfg.scenario == browseScenario && cfg.browse.outageFor > 0) ||
		(cfg.scenario == reserveScenario && cfg.reserve.pausePercent > 0)
	if needAdmin && cfg.stampede.adminToken == "" {
		return config{}, fmt.Errorf("%s with these flags switches the API's settings: it needs -admin-token (or ADMIN_TOKEN)", cfg.scenario)
	}
	return cfg, nil
}

// validateTarget parses raw as an http(s) URL and, unless allowRemote,
// requires its host to be "localhost" or a loopback IP literal
// (127.0.0.0/8, ::1). It never resolves names or connects: a name other
// than localhost is rejected rather than looked up. The error wraps
// ErrRemoteTarget when only the loopback rule failed.
func validateTarget(raw string, allowRemote bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("-target: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-target %q: scheme must be http or https", raw)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("-target %q: no host", raw)
	}
	if allowRemote || isLoopbackHost(host) {
		return u, nil
	}
	return nil, fmt.Errorf("-target %q: %w", raw, ErrRemoteTarget)
}

// isLoopbackHost reports whether host (without port or brackets) is
// "localhost" or a loopback IP literal, without any name resolution.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// usageText opens -h, before the flag list.
const usageText = `Usage: loadgen [flags] scenario

Open-model load generator for the stampede API. Requests start on a fixed
schedule at -rate whether or not earlier ones finished, and latency is
measured from each request's scheduled start, so a slow server cannot hide
its queueing delay. A progress line is shown once a second (in place on a
terminal, one log line each otherwise).

Scenarios:
  stampede  switch the category_stats cache through each -phases strategy and
            drive -rate requests/s at -hot-keys categories for -phase-duration
            each; the report compares recomputes per key per TTL window, hit
            ratio, early refreshes and latency per strategy.
  browse    Zipf-distributed product reads, batch reads and searches for
            -duration; with -outage-for, the cache's Redis is made unavailable
            (admin fault knob) from -outage-at on, and the report shows reads,
            database load and hit ratio before, during and after.
  reserve   reserve 1..3 units of -skus for -duration with fresh idempotency
            keys, replaying -replay-percent of earlier ones, then check through
            the API that nothing was oversold and every reservation is
            accounted for; exits non-zero if not. -pause-percent turns on the
            lost-lock knob so fenced writes show up.
  lostlock  the reserve load once per -modes reservation mode (unsafe, lock,
            fenced), each from -stock free units per product, with the
            -pause-percent knob; the report compares oversold units (read
            from the inventories) per mode. Exits non-zero if fenced oversold.
  demo      the endless mix compose runs: browse at -rate, reservations and
            cancellations at -demo-reserve-rate, and every -burst-every a
            stampede burst of -burst-rate for -burst-for on the hot categories,
            cycling through -phases. Runs until stopped when -duration is 0.

Every scenario but demo writes summary.json, report.md and PNG charts to
-report-dir and exits non-zero when an invariant fails or the error rate
passes -max-error-rate. "loadgen -report-dir DIR replot" renders report.md
and the charts again from DIR/summary.json, without sending any request.

Flags:
`
