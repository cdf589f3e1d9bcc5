package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/catalog"
	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/seed"
	"github.com/stampede-lab/stampede/migrations"
)

// run is the whole program: it returns when ctx ends (after a graceful
// shutdown) or on a fatal error; for help (-h) it prints the usage to stdout
// and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd, cfg, err := parseConfig(args, getenv, stdout)
	if err != nil || cmd == "help" {
		return err
	}
	var h slog.Handler = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})
	if cfg.logJSON {
		h = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})
	}
	log := slog.New(h)
	if cmd == "healthcheck" {
		return healthcheck(ctx, cfg.healthURL)
	}

	poolCfg, err := pgxpool.ParseConfig(cfg.databaseURL)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if _, set := poolCfg.ConnConfig.RuntimeParams["statement_timeout"]; !set && cmd != "migrate" && cmd != "seed" {
		// Every query of the server ends within 5s (the URL may say
		// otherwise), well inside a request's 10s: a query that runs long
		// answers 503. Migrations and the seed run without it.
		poolCfg.ConnConfig.RuntimeParams["statement_timeout"] = "5s"
	}
	if !strings.Contains(cfg.databaseURL, "pool_max_conns") {
		// pgxpool's default (the CPU count, at least 4) is too few for a
		// server whose reservations hold a connection through a pause.
		poolCfg.MaxConns = 32
	}
	var tp *sdktrace.TracerProvider
	if cmd == "serve" {
		if tp, err = tracerProvider(ctx, cfg.otlpEndpoint, cfg.traceSample); err != nil {
			return err
		}
		if tp != nil {
			// The SDK reports failed exports through OpenTelemetry's one
			// error handler, by default an unstructured line on stderr:
			// this process's handler logs them like every other line.
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("trace export failed", "error", err.Error()) }))
			defer func() { // flush the spans still batched
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := tp.Shutdown(sctx); err != nil {
					log.Warn("trace export failed", "error", err.Error())
				}
			}()
		}
		tracePostgres(poolCfg, tp)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()

	switch cmd {
	case "migrate":
		return migrate(ctx, pool, log)
	case "seed":
		if err := migrate(ctx, pool, log); err != nil {
			return err
		}
		res, err := seed.Run(ctx, pool, seed.Config{Scale: cfg.scale})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "seed: scale %v, %d categories, %d products, %d reviews, skipped=%v, %v\n",
			res.Scale, res.Categories, res.Products, res.Reviews, res.Skipped, res.Duration.Round(time.Millisecond))
		return nil
	}
	if cfg.migrate {
		if err := migrate(ctx, pool, log); err != nil {
			return err
		}
	}
	return serve(ctx, cfg, pool, tp, log, stdout)
}

func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer conn.Release()
	res, err := migrations.Apply(ctx, conn.Conn())
	if err != nil {
		return err
	}
	log.Info("migrations", "version", res.Version, "applied", res.Applied)
	return nil
}

// lockTTL is the reservation lock's TTL.
const lockTTL = 5 * time.Second

// redisClient opens a client whose every call is bounded by the caller's
// context deadline (cachex and lockx refuse a client without), with one
// dial attempt so a dead Redlock node fails fast. The read/write timeouts
// are timeout, the package's Timeout (-cache-timeout, the lock's TTL/10) as
// well, so that a hung server frees an AutoPipeliner's stream as soon as
// the callers gave up (docs/lockx.md#clients); dial bounds a dial (0:
// go-redis's default).
func redisClient(url string, timeout, dial time.Duration) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url %q: %w", url, err)
	}
	// One dial attempt, no command retries: a dead Redis must cost a call
	// its timeout once, not go-redis's retries and backoff (seconds).
	opt.DialerRetries, opt.MaxRetries, opt.ContextTimeoutEnabled = 1, -1, true
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dial, timeout, timeout
	return redis.NewClient(opt), nil
}

// cacheClient opens the caches' client: a Redis Cluster's when
// REDIS_CLUSTER_URL is set, else REDIS_URL's one server, with the same
// bounds as redisClient's cache client (context deadlines honoured,
// -cache-timeout per node, one dial attempt, no command retries; a cluster still
// follows MOVED and ASK redirects).
func cacheClient(cfg config) (redis.UniversalClient, error) {
	if cfg.redisClusterURL == "" {
		c, err := redisClient(cfg.redisURL, cfg.cacheTimeout, cfg.cacheTimeout)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	opt, err := redis.ParseClusterURL(cfg.redisClusterURL)
	if err != nil {
		return nil, fmt.Errorf("redis cluster url %q: %w", cfg.redisClusterURL, err)
	}
	opt.DialerRetries, opt.MaxRetries, opt.ContextTimeoutEnabled = 1, -1, true
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = cfg.cacheTimeout, cfg.cacheTimeout, cfg.cacheTimeout
	return redis.NewClusterClient(opt), nil
}

// nearMaxStaleness bounds how long the near cache serves a value whose
// invalidation was lost (redis.ClientSideCacheConfig.MaxStaleness).
const nearMaxStaleness = 2 * time.Second

// nearClient opens the client of the near-cached caches: REDIS_URL's server
// as cacheClient opens it, with go-redis's client-side caching (RESP3), its
// metrics registered on reg. Nil when -near-cache is off or the caches are
// on a cluster, which go-redis cannot near-cache.
func nearClient(cfg config, reg prometheus.Registerer) (*redis.Client, error) {
	if !cfg.nearCache || cfg.redisClusterURL != "" {
		return nil, nil
	}
	opt, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return nil, fmt.Errorf("redis url %q: %w", cfg.redisURL, err)
	}
	opt.DialerRetries, opt.MaxRetries, opt.ContextTimeoutEnabled, opt.Protocol = 1, -1, true, 3
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = cfg.cacheTimeout, cfg.cacheTimeout, cfg.cacheTimeout
	cc := redis.ClientSideCacheConfig{MaxEntries: 50_000, MaxStaleness: nearMaxStaleness}
	opt.ClientSideCache, opt.ClientSideCacheConfig = redis.NewLocalCache(cc), &cc // the LocalCache counts invalidations
	c := redis.NewClient(opt)
	if err := reg.Register(cachex.NearCacheCollector(c, "near")); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// healthChecks are the dependencies /health reports on: Postgres, the caches'
// Redis and each lock server.
func healthChecks(pool *pgxpool.Pool, cache redis.UniversalClient, locks []redis.UniversalClient) map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{
		"postgres":    pool.Ping,
		"cache_redis": func(ctx context.Context) error { return cache.Ping(ctx).Err() },
	}
	for i, n := range locks {
		checks[fmt.Sprintf("lock_redis_%d", i+1)] = func(ctx context.Context) error { return n.Ping(ctx).Err() }
	}
	return checks
}

func serve(ctx context.Context, cfg config, pool *pgxpool.Pool, sdk *sdktrace.TracerProvider, log *slog.Logger, stdout io.Writer) error {
	var tp trace.TracerProvider // stays nil, not a nil *TracerProvider, when tracing is off
	if sdk != nil {
		tp = sdk
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	cacheRedis, err := cacheClient(cfg)
	if err != nil {
		return err
	}
	defer cacheRedis.Close()
	if err := traceRedis(cacheRedis, sdk); err != nil {
		return err
	}
	nearRedis, err := nearClient(cfg, reg)
	if err != nil {
		return err
	}
	var near redis.UniversalClient // stays nil, not a nil *redis.Client, when off
	if nearRedis != nil {
		defer nearRedis.Close()
		if err := traceRedis(nearRedis, sdk); err != nil {
			return err
		}
		near = nearRedis
	}
	var lockNodes []redis.UniversalClient
	for _, u := range cfg.lockRedisURLs {
		c, err := redisClient(u, lockTTL/10, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := traceRedis(c, sdk); err != nil {
			return err
		}
		if !cfg.autoPipeline {
			lockNodes = append(lockNodes, c)
			continue
		}
		ap, err := c.AutoPipeline()
		if err != nil {
			return err
		}
		lockNodes = append(lockNodes, ap)
	}
	if err := registerPoolStats(reg, pool, cacheRedis); err != nil {
		return err
	}

	observe, err := catalog.QueryMetrics(reg)
	if err != nil {
		return err
	}
	faults := &catalog.Injector{}
	if err := reg.Register(faults.Collector()); err != nil {
		return err
	}
	store := catalog.NewStore(pool, catalog.WithObserver(observe), catalog.WithDelay(faults.DBDelay))

	// Reservation locks have no watchdog: a reservation is one short
	// transaction, bounded by the lock's context; a holder paused past the
	// TTL (the admin pause knob) loses the lock, and its write is fenced.
	locker, err := lockx.New(lockNodes, lockx.Options{
		Name: "inventory", TTL: lockTTL, Wait: 2 * time.Second, NoWatchdog: true, Registerer: reg, TracerProvider: tp,
	})
	if err != nil {
		return err
	}
	defer locker.Close()

	// The warehouse gets a pool of its own: a reservation holds a catalog
	// connection while it calls the warehouse, as it would an outside service.
	whCfg := pool.Config()
	whCfg.MaxConns = 8 // each warehouse call is one short transaction
	whPool, err := pgxpool.NewWithConfig(ctx, whCfg)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer whPool.Close()
	warehouse := catalog.NewWarehouse(whPool, observe)

	svc, err := catalog.NewService(catalog.Config{
		Store: store, Warehouse: warehouse, Mode: cfg.mode, HoldTTL: cfg.holdTTL, PendingAge: cfg.pendingAge, Flaws: cfg.flaws,
		Cache: cacheRedis, NearCache: near, Locker: locker, Faults: faults, Registerer: reg, Logger: log,
		AutoPipeline: cfg.autoPipeline, ReuseDecoded: cfg.reuseDecoded, TracerProvider: tp, CacheTimeout: cfg.cacheTimeout,
	})
	if err != nil {
		return err
	}
	defer svc.Close()

	handler, err := catalog.NewHandler(catalog.HandlerConfig{
		Service: svc, Faults: faults, AdminToken: cfg.adminToken, Registry: reg, Logger: log, TracerProvider: tp,
		// Ready is Postgres alone: the API serves every read through a cache
		// Redis outage, so that outage must not take every replica out of
		// its load balancer at once. /health reports each dependency.
		Ready:  pool.Ping,
		Checks: healthChecks(pool, cacheRedis, lockNodes),
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stdout, "api: listening on %s (admin API %s)\n", ln.Addr(), map[bool]string{true: "on", false: "off"}[cfg.adminToken != ""])
	log.Info("listening", "addr", ln.Addr().String(), "lock_nodes", len(lockNodes), "cache_cluster", cfg.redisClusterURL != "", "redis_autopipeline", cfg.autoPipeline, "reuse_decoded", cfg.reuseDecoded, "near_cache", near != nil,
		"otlp_endpoint", cfg.otlpEndpoint, "trace_sample", cfg.traceSample)

	// Every replica sweeps expired holds and reconciles what cuts left; a
	// hold's units come back once whichever does it.
	sweepCtx, stopSweeper := context.WithCancel(ctx)
	sweeping := make(chan struct{})
	ticker := time.NewTicker(cfg.sweepEvery)
	go func() { defer close(sweeping); svc.RunSweeper(sweepCtx, ticker.C, log) }()
	defer func() { ticker.Stop(); stopSweeper(); <-sweeping }()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Stop accepting, drain the requests in flight (they release their
	// locks as they finish); then the deferred closes stop the caches'
	// background refreshes and the pools.
	log.Info("shutting down", "drain", cfg.drain)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// registerPoolStats exports the pgx and go-redis connection pools' state.
func registerPoolStats(reg prometheus.Registerer, pool *pgxpool.Pool, rdb redis.UniversalClient) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	for _, c := range []prometheus.Collector{
		gauge("pgxpool_acquired_conns", "Postgres connections in use.", func() float64 { return float64(pool.Stat().AcquiredConns()) }),
		gauge("pgxpool_idle_conns", "Idle Postgres connections.", func() float64 { return float64(pool.Stat().IdleConns()) }),
		gauge("pgxpool_max_conns", "Size limit of the Postgres pool.", func() float64 { return float64(pool.Stat().MaxConns()) }),
		counter("pgxpool_empty_acquire_total", "Acquires that had to wait for a Postgres connection.", func() float64 { return float64(pool.Stat().EmptyAcquireCount()) }),
		gauge("redis_pool_total_conns", "Connections in the cache's Redis pool.", func() float64 { return float64(rdb.PoolStats().TotalConns) }),
		gauge("redis_pool_idle_conns", "Idle connections in the cache's Redis pool.", func() float64 { return float64(rdb.PoolStats().IdleConns) }),
		counter("redis_pool_timeouts_total", "Waits for a Redis connection that timed out.", func() float64 { return float64(rdb.PoolStats().Timeouts) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// healthcheck GETs url and returns nil when it answers 200 within two
// seconds: the container healthcheck of an image that has no shell or curl.
func healthcheck(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
	}
	return nil
}
