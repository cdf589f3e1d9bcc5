package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/catalog"
)

// config is everything the api reads from flags and the environment.
type config struct {
	httpAddr    string
	databaseURL string
	redisURL    string
	// redisClusterURL, when set, puts the caches on a Redis Cluster
	// (redis.ParseClusterURL's form) instead of redisURL's one server.
	redisClusterURL string
	lockRedisURLs   []string
	adminToken      string
	mode            catalog.Mode
	holdTTL         time.Duration
	sweepEvery      time.Duration
	pendingAge      time.Duration
	flaws           catalog.Flaws
	logLevel        slog.Level
	logJSON         bool
	migrate         bool
	drain           time.Duration
	scale           float64
	healthURL       string
	autoPipeline    bool
	reuseDecoded    int
	cacheTimeout    time.Duration
	nearCache       bool
	otlpEndpoint    string
	traceSample     float64
}

// command is one subcommand of the api, for the help text.
type command struct{ name, what string }

// commands lists the subcommands in the order the help shows them; the first
// is the default.
func commands() []command {
	return []command{
		{"serve", "apply the migrations (unless -migrate=false), then serve HTTP until SIGTERM or SIGINT (the default)"},
		{"migrate", "apply the database migrations and exit"},
		{"seed", "apply the migrations, load the deterministic demo catalog (-scale) unless already loaded, and exit"},
		{"healthcheck", "exit 0 when -url answers 200 within 2s (the container healthcheck of an image without a shell)"},
		{"help", "print this help and exit (also -h, -help, --help)"},
	}
}

// boolValues lists what strconv.ParseBool accepts, for the error on any
// other value of a boolean setting.
const boolValues = "1, t, T, TRUE, true, True, 0, f, F, FALSE, false or False"

// parseConfig reads flags, falling back to the environment for each, and
// returns the subcommand (serve, migrate, seed, healthcheck or help). For
// help, and for -h on any subcommand, it prints the usage to stdout and
// returns "help" with no error.
func parseConfig(args []string, getenv func(string) string, stdout io.Writer) (string, config, error) {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if !slices.ContainsFunc(commands(), func(c command) bool { return c.name == cmd }) {
		return "", config{}, fmt.Errorf("unknown command %q: want serve, migrate, seed, healthcheck or help (api -h lists them)", cmd)
	}
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	// A boolean setting takes what strconv.ParseBool accepts; the error on
	// anything else waits until the flags are parsed, so that -h still
	// works.
	var envErrs []error
	envBool := func(name string, def bool) bool {
		v := getenv(name)
		if v == "" {
			return def
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			envErrs = append(envErrs, fmt.Errorf("%s=%q is not a boolean: want %s", name, v, boolValues))
			return def
		}
		return b
	}
	// The flag package's own output is discarded: help goes to stdout
	// below, and a parse error is returned (main prints it).
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var c config
	var lockURLs, level, format string
	fs.StringVar(&c.httpAddr, "http-addr", env("HTTP_ADDR", ":8080"), "listen address (env HTTP_ADDR)")
	fs.StringVar(&c.databaseURL, "database-url", env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/stampede?sslmode=disable"), "Postgres connection string (env DATABASE_URL)")
	fs.StringVar(&c.redisURL, "redis-url", env("REDIS_URL", "redis://127.0.0.1:6379"), "Redis of the caches (env REDIS_URL)")
	fs.StringVar(&c.redisClusterURL, "redis-cluster-url", env("REDIS_CLUSTER_URL", ""), "a Redis Cluster for the caches instead of -redis-url: redis://host:port?addr=host2:port2&addr=... names the seed nodes; needs -lock-redis-urls (env REDIS_CLUSTER_URL)")
	fs.StringVar(&lockURLs, "lock-redis-urls", env("LOCK_REDIS_URLS", ""), "comma-separated Redis URLs of the lock: one, or several independent masters for Redlock; default: the cache's Redis (env LOCK_REDIS_URLS)")
	fs.StringVar(&c.adminToken, "admin-token", env("ADMIN_TOKEN", ""), "Bearer token of the admin API; empty disables it (env ADMIN_TOKEN)")
	var mode string
	fs.StringVar(&mode, "reservation-mode", env("RESERVATION_MODE", string(catalog.ModeFenced)), "how reservations guard the warehouse: unsafe (no lock), lock (no token check) or fenced; the admin API changes it at run time (env RESERVATION_MODE)")
	var holdTTL string
	fs.StringVar(&holdTTL, "hold-ttl", env("HOLD_TTL", catalog.DefaultHoldTTL.String()), "how long a reservation holds its units before it expires, at least 1s (env HOLD_TTL)")
	var sweepEvery, pendingAge string
	fs.StringVar(&sweepEvery, "sweep-every", env("SWEEP_EVERY", "10s"), "how often expired reservations are swept and cut-off sagas reconciled (env SWEEP_EVERY)")
	fs.StringVar(&pendingAge, "pending-age", env("PENDING_AGE", catalog.DefaultPendingAge.String()), "how old a reservation's intent must be before the reconciler settles it, at least 1s (env PENDING_AGE)")
	var flaws string
	fs.StringVar(&flaws, "flaws", env("FLAWS", ""), "for checkers only: bugs the saga fixed, put back so that a checker can show it finds them, comma-separated: give-first (a cancel gives the units back before the catalog ends the hold), abandon-unlooked (a refused take removes its intent without looking up an earlier attempt's take) (env FLAWS)")
	fs.StringVar(&level, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	fs.StringVar(&format, "log-format", env("LOG_FORMAT", "json"), "json (one object per line) or text (env LOG_FORMAT)")
	fs.StringVar(&c.otlpEndpoint, "otlp-endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", ""), "base URL of an OTLP/HTTP trace receiver such as Jaeger's (http://127.0.0.1:4318); empty: no tracing (env OTEL_EXPORTER_OTLP_ENDPOINT)")
	var sample string
	fs.StringVar(&sample, "trace-sample", env("TRACE_SAMPLE", "0.1"), "fraction of the traces that start at the API to keep, 0 to 1; a caller's traceparent decides for its own (env TRACE_SAMPLE)")
	fs.BoolVar(&c.autoPipeline, "redis-autopipeline", envBool("REDIS_AUTOPIPELINE", true), "batch the caches' Redis commands with other requests' while requests overlap, and the lock's always, through go-redis's AutoPipeliner (env REDIS_AUTOPIPELINE: "+boolValues+")")
	var cacheTimeout string
	fs.StringVar(&cacheTimeout, "cache-timeout", env("CACHE_TIMEOUT", "100ms"), "how long a cache call waits for Redis before it reads through to Postgres, from 1ms to 10s; the caches' client's dial, read and write timeouts equal it (env CACHE_TIMEOUT)")
	var reuse string
	fs.StringVar(&reuse, "reuse-decoded", env("REUSE_DECODED", "4096"), "how many product and category-stats values to keep decoded for hits on an unchanged entry; 0 turns it off (env REUSE_DECODED)")
	fs.BoolVar(&c.nearCache, "near-cache", envBool("NEAR_CACHE", false), "serve product and category-stats hits from process memory, kept fresh by Redis's invalidation pushes (go-redis client-side caching; a read after another instance's write is stale for at most "+nearMaxStaleness.String()+"); needs REDIS_URL's one server, not a cluster (env NEAR_CACHE: "+boolValues+")")
	fs.BoolVar(&c.migrate, "migrate", envBool("MIGRATE", true), "apply migrations before serving (env MIGRATE: "+boolValues+")")
	fs.DurationVar(&c.drain, "drain", 20*time.Second, "how long SIGTERM waits for requests in flight")
	fs.Float64Var(&c.scale, "scale", 1, "seed: catalog size, 1 = 25,000 products and 400,000 reviews")
	fs.StringVar(&c.healthURL, "url", "http://127.0.0.1:8080/readyz", "healthcheck: the URL that must answer 200 within 2s (for container healthchecks in an image without a shell)")
	err := fs.Parse(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return "", config{}, fmt.Errorf("%w (api -h lists the flags)", err)
	}
	if err != nil || cmd == "help" {
		if err == nil && fs.NArg() > 0 {
			return "", config{}, fmt.Errorf("help: unexpected arguments %q", fs.Args())
		}
		fs.SetOutput(stdout)
		usage(fs)
		return "help", config{}, nil
	}
	if fs.NArg() > 0 {
		return "", config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := errors.Join(envErrs...); err != nil {
		return "", config{}, err
	}
	if c.flaws, err = catalog.ParseFlaws(flaws); err != nil {
		return "", config{}, err
	}
	if err := c.parseDurations(holdTTL, sweepEvery, pendingAge, cacheTimeout); err != nil {
		return "", config{}, err
	}
	if c.reuseDecoded, err = strconv.Atoi(reuse); err != nil || c.reuseDecoded < 0 || c.reuseDecoded > 1<<20 {
		return "", config{}, fmt.Errorf("-reuse-decoded must be a whole number from 0 to %d, got %q", 1<<20, reuse)
	}
	if c.traceSample, err = strconv.ParseFloat(sample, 64); err != nil || !(c.traceSample >= 0 && c.traceSample <= 1) {
		return "", config{}, fmt.Errorf("-trace-sample must be a number from 0 to 1, got %q", sample)
	}
	if err := checkOTLPEndpoint(c.otlpEndpoint); err != nil {
		return "", config{}, err
	}
	m, err := catalog.ParseMode(mode)
	if err != nil {
		return "", config{}, fmt.Errorf("reservation mode %q: want unsafe, lock or fenced", mode)
	}
	c.mode = m
	if err := c.logLevel.UnmarshalText([]byte(level)); err != nil {
		return "", config{}, fmt.Errorf("log level: %w", err)
	}
	switch format {
	case "text":
	case "json":
		c.logJSON = true
	default:
		return "", config{}, fmt.Errorf("log format %q: want text or json", format)
	}
	redisURLSet := getenv("REDIS_URL") != ""
	fs.Visit(func(f *flag.Flag) { redisURLSet = redisURLSet || f.Name == "redis-url" })
	if err := checkCluster(c.redisClusterURL, redisURLSet, lockURLs); err != nil {
		return "", config{}, err
	}
	c.lockRedisURLs = []string{c.redisURL}
	if lockURLs != "" {
		c.lockRedisURLs = nil
		for _, u := range strings.Split(lockURLs, ",") {
			if u = strings.TrimSpace(u); u != "" {
				c.lockRedisURLs = append(c.lockRedisURLs, u)
			}
		}
	}
	if len(c.lockRedisURLs) == 0 {
		return "", config{}, errors.New("LOCK_REDIS_URLS holds no URL")
	}
	return cmd, c, nil
}

// checkCluster accepts an empty clusterURL, or a redis.ParseClusterURL URL
// when the caches' one-server URL was not given as well (one of the two
// places the caches) and the lock has URLs of its own: the lock's default,
// the caches' Redis, is one server, and a Redlock quorum needs independent
// masters, not a cluster's.
func checkCluster(clusterURL string, redisURLSet bool, lockURLs string) error {
	if clusterURL == "" {
		return nil
	}
	if redisURLSet {
		return errors.New("REDIS_URL and REDIS_CLUSTER_URL both set: the caches use one server or a cluster, set one of them")
	}
	if strings.TrimSpace(strings.ReplaceAll(lockURLs, ",", "")) == "" {
		return errors.New("REDIS_CLUSTER_URL needs LOCK_REDIS_URLS: the lock runs on independent masters, not on the caches' cluster")
	}
	if _, err := redis.ParseClusterURL(clusterURL); err != nil {
		return fmt.Errorf("REDIS_CLUSTER_URL %q: %w", clusterURL, err)
	}
	return nil
}

// parseDurations sets the durations: the reservations' hold TTL and
// pending age at least 1s, the sweep's period positive, the cache timeout
// from 1ms to 10s.
func (c *config) parseDurations(holdTTL, sweepEvery, pendingAge, cacheTimeout string) error {
	var errs []error
	parse := func(name, s string, min time.Duration) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil || d < min {
			errs = append(errs, fmt.Errorf("-%s must be a duration of at least %v, got %q", name, min, s))
		}
		return d
	}
	c.holdTTL = parse("hold-ttl", holdTTL, time.Second)
	c.sweepEvery = parse("sweep-every", sweepEvery, time.Millisecond)
	c.pendingAge = parse("pending-age", pendingAge, time.Second)
	if c.cacheTimeout = parse("cache-timeout", cacheTimeout, time.Millisecond); c.cacheTimeout > 10*time.Second {
		errs = append(errs, fmt.Errorf("-cache-timeout must be at most 10s, got %q", cacheTimeout))
	}
	return errors.Join(errs...)
}

// usage prints the subcommands, one line each, and the flags to fs's output.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, "usage: api [command] [flags]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.what)
	}
	fmt.Fprint(w, "\nflags (\"env X\": when set, the environment variable X is the default):\n")
	fs.PrintDefaults()
}
