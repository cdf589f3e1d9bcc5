package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/catalog"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// ReserveConfig is a run of the reserve workload: two API processes on one
// database, three lock servers and a cache server, every server behind a
// fault proxy.
type ReserveConfig struct {
	Seed     uint64
	Duration time.Duration
	// Mode is the instances' reservation mode; "" is fenced. In unsafe mode
	// the checker must find units sold twice.
	Mode catalog.Mode
	// Flaws are checker-only flaws the instances run with (cmd/api
	// -flaws, env FLAWS), to show that the checks catch them: FlawGiveFirst
	// must be found as units sold twice. None by default.
	Flaws []string
	// Products each start with Stock units; Clients send requests at once.
	Products, Stock, Clients int
	// OutDir receives porcupine's visualisation of a history that is not
	// linearizable, and the processes' logs; "" keeps neither.
	OutDir string
	// Faults, when not nil, replaces the schedule drawn from Seed.
	Faults []Fault
	// APIBinary is the cmd/api binary to attack; "" builds it from this
	// module (the go command must be on PATH).
	APIBinary string
}

// The flaws cmd/api can be given for checkers (ReserveConfig.Flaws).
const (
	// FlawGiveFirst gives a cancelled hold's units back before the catalog
	// ends it: the order of effects before the saga.
	FlawGiveFirst = catalog.FlawGiveFirst
	// FlawAbandonUnlooked lets an attempt remove its intent and answer 409
	// without looking whether an earlier attempt's take of its key was
	// applied: a retry then orphans the units of an earlier attempt's take.
	FlawAbandonUnlooked = catalog.FlawAbandonUnlooked
)

// flawsEnv is the environment entry that gives the API processes flaws
// (cmd/api -flaws).
func flawsEnv(flaws []string) string {
	return "FLAWS=" + strings.Join(flaws, ",")
}

func (c *ReserveConfig) defaults() {
	if c.Products == 0 {
		c.Products = 3
	}
	if c.Stock == 0 {
		c.Stock = 10
	}
	if c.Clients == 0 {
		c.Clients = 6
	}
}

const (
	adminToken = "torture"
	// Nodes of the reserve workload's faults: the servers behind proxies
	// (0 the caches' Redis, 1..3 the lock's quorum, 4 Postgres), then the
	// API processes.
	reserveRedisNodes = 4
	reservePostgres   = 4
	reserveFirstAPI   = 5
	reserveAPIs       = 2
	// The instances' settings: holds expire during the run, the sweeper and
	// the reconciler run often. cmd/api's lock TTL is 5 s.
	reserveHoldTTL    = "4s"
	reserveSweepEvery = "500ms"
	reservePendingAge = "3s"
	reserveLockTTL    = 5 * time.Second
	// reserveClientTimeout is how long a client waits for an answer: a
	// retry on an instance slowed by row_lock takes three of its delays
	// and the product's lock, up to about 14.7 s, and its answer is what
	// the untruthful-refusal check reads.
	reserveClientTimeout = 20 * time.Second
)

// reserveTargets are where the reserve workload's faults strike: the Redis
// servers (any kind), Postgres (the network kinds, and terminated
// sessions), the API processes (SIGSTOP, SIGKILL and a restart; pauses up
// to past the lock's TTL), the reservations' pause knob, and row_lock
// (activations blocked 10-30 s while one instance's database is slow past
// the lock's TTL: rowlock.go).
func reserveTargets() []target {
	return []target{
		{kinds: []Kind{FaultLatency, FaultTimeout, FaultResetPeer, FaultSlowClose, FaultBandwidth, FaultPause, FaultRestart, FaultSnapshot},
			nodes: []int{0, 1, 2, 3}, minFor: 300 * time.Millisecond, maxFor: 2 * time.Second, weight: 15},
		{kinds: []Kind{FaultLatency, FaultTimeout, FaultResetPeer, FaultSlowClose, FaultBandwidth, FaultTerminate},
			nodes: []int{reservePostgres}, minFor: 300 * time.Millisecond, maxFor: 3 * time.Second, weight: 15},
		{kinds: []Kind{FaultPause, FaultRestart}, nodes: []int{reserveFirstAPI, reserveFirstAPI + 1},
			minFor: 500 * time.Millisecond, maxFor: 8 * time.Second, weight: 15},
		{kinds: []Kind{FaultClientPause}, nodes: []int{-1}, minFor: 300 * time.Millisecond, maxFor: 2 * time.Second, weight: 15},
		// Rare: while it lasts, little else happens to reservations.
		{kinds: []Kind{FaultRowLock}, nodes: []int{reserveFirstAPI, reserveFirstAPI + 1},
			minFor: 10 * time.Second, maxFor: 30 * time.Second, weight: 1},
	}
}

// RunReserve runs the reserve workload and checks it: every answer about a
// hold must fit one history of it (porcupine, holdsModel); every ledger
// sampled during the run must have each unit in exactly one place; at rest,
// once the faults are over and the clients have settled what they did not
// learn, every unit must be held or free and none orphaned; no 409 may be
// answered for a key whose take was applied before the answer; nothing may
// be oversold; replays return their reservation; no answer is a 500.
func RunReserve(ctx context.Context, cfg ReserveConfig) (*Result, error) {
	cfg.defaults()
	env := &Env{}
	defer env.Close()
	srv, apis, err := startReserve(ctx, env, cfg)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	checker, err := checkerPool(ctx, srv.db)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	defer checker.Close()

	faults := cfg.Faults
	if faults == nil {
		faults = newTargetSchedule(cfg.Seed, cfg.Duration, 5*time.Second, reserveTargets())
	}
	products := make([]int64, cfg.Products)
	for i := range products {
		products[i] = int64(i + 1)
	}
	inj := srv.injector(env)
	inj.apis, inj.apiNode = apis, reserveFirstAPI
	inj.latency = map[int]string{reservePostgres: `{"latency": 1000, "jitter": 800}`}
	inj.terminate = func(ctx context.Context) error { return terminateSessions(ctx, checker) }
	inj.onClientPause = func(on bool) { pauseReservations(apis, on) }
	inj.rowLock = rowLockFault(checker, products, inj.api)

	start := time.Now()
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	sampler := &ledgerSampler{db: checker, products: products, start: start, strict: fenced(cfg)}
	sampling, stopSampling := context.WithCancel(ctx)
	var sampled sync.WaitGroup
	sampled.Go(func() { sampler.run(sampling) })

	h := &reserveHistory{}
	clients := make([]*reserveClient, cfg.Clients)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &reserveClient{id: i, r: rand.New(rand.NewPCG(cfg.Seed, uint64(i))), cfg: cfg, apis: apis, h: h,
			hc: &http.Client{Timeout: reserveClientTimeout}, takenAt: takenAt(checker)}
		wg.Go(func() { clients[i].run(runCtx) })
	}
	recs := inj.run(runCtx, start, faults)
	wg.Wait()
	var down []Anomaly
	for _, p := range apis {
		if err := p.awaitReady(ctx); err != nil {
			down = append(down, Anomaly{Check: checkReadyName, Detail: err.Error()})
		}
	}
	pauseReservations(apis, false) // again: an instance that was down when the pause ended missed it
	for _, c := range clients {
		wg.Go(c.settle)
	}
	wg.Wait()
	stopSampling()
	sampled.Wait()

	res := &Result{Workload: "reserve", Seed: cfg.Seed, Duration: time.Since(start), Faults: recs, Ops: h.counts,
		Checks: []string{checkHoldsName, checkLedgerName, checkRestName, checkOrphanedName, checkNoOrphanName, checkUntruthfulName, checkOversoldName,
			checkReplayName, checkNo500Name, checkReadyName}}
	res.Ops["ledger_samples"] = sampler.samples
	res.Ops["ledger_orphaned_samples"] = sampler.orphaned
	res.Anomalies = append(res.Anomalies, down...)
	res.Anomalies = append(res.Anomalies, capAnomalies(h.anomalies)...)
	res.Anomalies = append(res.Anomalies, capAnomalies(sampler.anomalies)...)
	res.Anomalies = append(res.Anomalies, capAnomalies(atRest(ctx, checker, products, time.Minute, h, start))...)
	res.Anomalies = append(res.Anomalies, capAnomalies(untruthfulRefusals(ctx, checker, h, start))...)
	res.Anomalies = append(res.Anomalies, checkHolds(h.ops, cfg.OutDir)...)
	return res, nil
}

// startReserve starts the servers, the proxies (Postgres's last), and the
// API processes.
func startReserve(ctx context.Context, env *Env, cfg ReserveConfig) (*servers, []*apiProcess, error) {
	srv, err := startServers(ctx, env, func() []*testenv.RedisNode { return testenv.RedisNodes(env, reserveRedisNodes) },
		`INSERT INTO categories (id, slug, name) VALUES (1, 'torture', 'Torture');
		INSERT INTO products (id, category_id, sku, name, price_cents)
			SELECT i, 1, 'T-' || i, 'Product ' || i, 100 FROM generate_series(1, `+strconv.Itoa(cfg.Products)+`) i;
		INSERT INTO inventory (product_id, stock) SELECT id, `+strconv.Itoa(cfg.Stock)+` FROM products;`)
	if err != nil {
		return nil, nil, err
	}
	dbURL, err := proxiedURL(srv)
	if err != nil {
		srv.close()
		return nil, nil, fmt.Errorf("%w: %v", ErrSetup, err)
	}
	apis, err := startAPIs(ctx, env, cfg, srv, dbURL)
	if err != nil {
		srv.close()
		return nil, nil, err
	}
	return srv, apis, nil
}

// proxiedURL puts a proxy in front of the run's database and returns the
// connection string through it.
func proxiedURL(srv *servers) (string, error) {
	cc := srv.db.Config().ConnConfig
	addr, err := srv.px.add("postgres", fmt.Sprintf("%s:%d", cc.Host, cc.Port))
	if err != nil {
		return "", err
	}
	// Small pools: two instances and their warehouse pools must not take
	// every connection of a Postgres that others share.
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable&pool_max_conns=10", cc.User, cc.Password, addr, cc.Database), nil
}

// startAPIs starts the run's API processes on the proxied servers; the
// env's cleanup kills them.
func startAPIs(ctx context.Context, env *Env, cfg ReserveConfig, srv *servers, dbURL string) ([]*apiProcess, error) {
	dir := env.TempDir()
	bin := cfg.APIBinary
	if bin == "" {
		var err error
		if bin, err = buildAPI(ctx, dir); err != nil {
			return nil, err
		}
	}
	var locks []string
	for _, px := range srv.px.list[1:reserveRedisNodes] {
		locks = append(locks, "redis://"+px.Listen)
	}
	mode := cfg.Mode
	if mode == "" {
		mode = catalog.ModeFenced
	}
	environ := []string{"DATABASE_URL=" + dbURL, "REDIS_URL=redis://" + srv.px.list[0].Listen, "LOCK_REDIS_URLS=" + strings.Join(locks, ","),
		"ADMIN_TOKEN=" + adminToken, "MIGRATE=false", "RESERVATION_MODE=" + string(mode), "LOG_LEVEL=warn",
		"HOLD_TTL=" + reserveHoldTTL, "SWEEP_EVERY=" + reserveSweepEvery, "PENDING_AGE=" + reservePendingAge,
		flawsEnv(cfg.Flaws), "OTEL_EXPORTER_OTLP_ENDPOINT="}
	logDir := dir
	if cfg.OutDir != "" {
		if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		logDir = cfg.OutDir
	}
	var apis []*apiProcess
	for i := range reserveAPIs {
		p := &apiProcess{bin: bin, env: environ, logPath: filepath.Join(logDir, fmt.Sprintf("api-%d.log", i+1))}
		if err := env.Setup(func() { p.addr = testenv.FreeAddr(env) }); err != nil {
			return nil, err
		}
		if err := p.start(ctx); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		env.Cleanup(func() { _ = p.kill() })
		apis = append(apis, p)
	}
	return apis, nil
}

// takenAt returns a look-up of when the warehouse applied the take of an
// idempotency key, on the checker's pool.
func takenAt(checker *pgxpool.Pool) func(key string) (time.Time, bool) {
	return func(key string) (time.Time, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var at time.Time
		err := checker.QueryRow(ctx, `SELECT moved_at FROM warehouse_moves WHERE move_key = $1`, catalog.TakeKey(key)).Scan(&at)
		return at, err == nil
	}
}

// checkerPool is a pool on the run's database, without the proxy, whose
// sessions the terminate fault spares.
func checkerPool(ctx context.Context, db *pgxpool.Pool) (*pgxpool.Pool, error) {
	c := db.Config().Copy()
	c.ConnConfig.RuntimeParams["application_name"] = checkerApp
	c.MaxConns = max(c.MaxConns, 8) // the sampler, the row_lock fault's session, the clients' look-ups
	return pgxpool.NewWithConfig(ctx, c)
}

const checkerApp = "torture-checker"

// terminateSessions ends every session on the run's database but the
// checker's, as pg_terminate_backend by an operator or a failover would.
func terminateSessions(ctx context.Context, checker *pgxpool.Pool) error {
	_, err := checker.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> $1`, checkerApp)
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "57P01") {
		return err
	}
	return nil
}

// pauseReservations turns the instances' reservation pause knob on (every
// reservation stops past the lock's TTL between its warehouse read and
// write) or off, leaving their other knobs (a row_lock's database latency)
// as they are. An instance that is down misses it (a restarted one starts
// with it off); RunReserve turns it off again once the faults are over.
func pauseReservations(apis []*apiProcess, on bool) {
	ms, percent := int64(0), 0
	if on {
		ms, percent = (reserveLockTTL * 3 / 2).Milliseconds(), 100
	}
	for _, p := range apis {
		_ = patchFaults(p, fmt.Sprintf(`{"reservation_pause_ms": %d, "reservation_pause_percent": %d}`, ms, percent))
	}
}

// fenced reports whether a run's instances run the saga as it is, in fenced
// mode without flaws: then no unit is ever orphaned.
func fenced(cfg ReserveConfig) bool {
	return (cfg.Mode == "" || cfg.Mode == catalog.ModeFenced) && len(cfg.Flaws) == 0
}
