// Command loadgen drives the stampede API with open-model load and measures
// client latency from each request's scheduled start (no coordinated
// omission).
//
//	loadgen [flags] [scenario]
//
// It only ever talks to the -target URL, which must be a loopback address
// unless -allow-remote is given. The stampede and reserve scenarios are
// implemented; browse and demo are not yet (the command validates its flags
// and exits with an error for them).
// `loadgen -h` lists every flag with its default.
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
)

// errNotImplemented is returned by run for any invocation other than -h until
// the scenarios exist.
var errNotImplemented = errors.New("scenarios are not implemented yet")

// ErrRemoteTarget is returned (wrapped) when the target is not a loopback
// address and -allow-remote was not given.
var ErrRemoteTarget = errors.New("target is not a loopback address (127.0.0.0/8, ::1 or localhost); pass -allow-remote to load another host")

// config is the parsed and validated command line.
type config struct {
	target      *url.URL
	allowRemote bool
	rate        float64
	duration    time.Duration
	maxRequests int64
	maxInFlight int
	scenario    string
	stampede    stampedeConfig
	reserve     reserveConfig
}

// run is the whole program: it parses args (with LOADGEN_TARGET from getenv
// as the -target fallback and ADMIN_TOKEN as the -admin-token one), validates
// them and runs the scenario; scenarios other than stampede and reserve return
// errNotImplemented. -h prints usage to stderr and returns nil. It never
// opens a network connection before the target has been validated.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	switch cfg.scenario {
	case stampedeScenario:
		return runStampede(ctx, cfg, stdout, stderr)
	case reserveScenario:
		return runReserve(ctx, cfg, stdout, stderr)
	}
	return errNotImplemented
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
		"base URL of the stampede API; the only host loadgen talks to (env LOADGEN_TARGET)")
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
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: loadgen [flags] [scenario]

Open-model load generator for the stampede API. Latency is measured from each
request's scheduled start, so a slow server cannot hide its queueing delay.
Scenarios: stampede (switches the category_stats cache through each -phases
strategy and drives -rate requests/s at -hot-keys categories for
-phase-duration each, writing <report-dir>/summary.json) and reserve (reserves
1..3 units of -skus at -rate for -phase-duration with fresh idempotency keys,
replaying -replay-percent of earlier ones, then checks through the API that
nothing was oversold and every reservation is accounted for; exits non-zero
if not). browse and demo are not implemented yet.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 1 {
		return config{}, fmt.Errorf("at most one scenario, got %q", fs.Args())
	}
	cfg.scenario = fs.Arg(0)

	u, err := validateTarget(target, cfg.allowRemote)
	if err != nil {
		return config{}, err
	}
	cfg.target = u
	switch {
	case !(cfg.rate > 0):
		return config{}, fmt.Errorf("-rate must be > 0, got %v", cfg.rate)
	case cfg.duration < 0:
		return config{}, fmt.Errorf("-duration must be >= 0, got %v", cfg.duration)
	case cfg.maxRequests < 0:
		return config{}, fmt.Errorf("-max-requests must be >= 0, got %d", cfg.maxRequests)
	case cfg.duration == 0 && cfg.maxRequests == 0:
		return config{}, errors.New("-duration and -max-requests are both 0: the run would never stop by itself")
	case cfg.maxInFlight <= 0:
		return config{}, fmt.Errorf("-max-in-flight must be > 0, got %d", cfg.maxInFlight)
	}
	switch cfg.scenario {
	case stampedeScenario:
		if err := cfg.stampede.validate(); err != nil {
			return config{}, err
		}
	case reserveScenario:
		if err := cfg.reserve.validate(&cfg.stampede); err != nil {
			return config{}, err
		}
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
