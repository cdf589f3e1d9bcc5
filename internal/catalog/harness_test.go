package catalog

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/seed"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// testAPI is the whole API on real servers: a seeded Postgres database, a
// private Redis for the caches and the lock, and the HTTP handler.
type testAPI struct {
	t       testing.TB
	db      *pgxpool.Pool
	redis   *testenv.RedisNode
	svc     *Service
	faults  *Injector
	reg     *prometheus.Registry
	handler http.Handler
	locker  *lockx.Locker
	opts    apiOptions
	spec    *specCheck
}

const testAdminToken = "s3cret-admin"

// testLockTTL is the TTL of the products' locks in the tests; lockx bounds
// each call to Redis at a tenth of it (200ms). Tests that need a lock to be
// lost let it run out.
const testLockTTL = 2 * time.Second

// apiOptions adjust newTestAPI.
type apiOptions struct {
	scale float64 // default 0.02 (500 products)
	// lockWait is how long a reservation waits for the product's lock
	// (lockx.Options.Wait); default 5s.
	lockWait time.Duration
	// tracer and log, when set, trace and log the instance as cmd/api does.
	tracer trace.TracerProvider
	log    *slog.Logger
}

func newTestAPI(t testing.TB, o apiOptions) *testAPI {
	t.Helper()
	if o.scale == 0 {
		o.scale = 0.02
	}
	if o.lockWait == 0 {
		o.lockWait = 5 * time.Second
	}
	ctx := context.Background()
	db := testenv.Postgres(t)
	if _, err := seed.Run(ctx, db, seed.Config{Scale: o.scale}); err != nil {
		t.Fatal(err)
	}
	return startInstance(t, db, testenv.RedisNodes(t, 1)[0], o)
}

// sibling starts a second API instance on a's database and Redis, with a
// registry of its own, as a second replica would be.
func (a *testAPI) sibling() *testAPI {
	a.t.Helper()
	return startInstance(a.t, a.db, a.redis, a.opts)
}

// startInstance builds one API instance on db and node.
func startInstance(t testing.TB, db *pgxpool.Pool, node *testenv.RedisNode, o apiOptions) *testAPI {
	t.Helper()
	ctx := context.Background()
	opt := node.Options()
	opt.ContextTimeoutEnabled, opt.MaxRetries, opt.DialerRetries = true, -1, 1
	opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second
	cacheRedis := redis.NewClient(opt)
	t.Cleanup(func() { _ = cacheRedis.Close() })
	lopt := node.Options()
	lopt.ContextTimeoutEnabled, lopt.MaxRetries, lopt.DialerRetries = true, -1, 1
	lockRedis := redis.NewClient(lopt)
	t.Cleanup(func() { _ = lockRedis.Close() })

	reg := prometheus.NewRegistry()
	faults := &Injector{}
	observe, err := QueryMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(db, WithObserver(observe), WithDelay(faults.DBDelay))
	// The lock and the caches ride AutoPipeliners, as cmd/api's do.
	lockAP, err := lockRedis.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	locker, err := lockx.New([]redis.UniversalClient{lockAP}, lockx.Options{
		Name: "inventory", TTL: testLockTTL, Wait: o.lockWait, NoWatchdog: true, Registerer: reg, TracerProvider: o.tracer,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locker.Close() })
	whPool, err := pgxpool.NewWithConfig(ctx, db.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(whPool.Close)
	svc, err := NewService(Config{Store: store, Warehouse: NewWarehouse(whPool, observe), Cache: cacheRedis, Locker: locker,
		Faults: faults, Registerer: reg, CacheTimeout: time.Second, AutoPipeline: true, ReuseDecoded: 64, TracerProvider: o.tracer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	// The server's budget for a request covers the lock wait the test chose,
	// so that a slow machine answers busy (the lock) rather than 503 (the
	// budget) before that wait has run out.
	h, err := NewHandler(HandlerConfig{Service: svc, Faults: faults, AdminToken: testAdminToken, Registry: reg, TracerProvider: o.tracer, Logger: o.log,
		RequestTimeout: o.lockWait + 10*time.Second, Ready: func(ctx context.Context) error { return db.Ping(ctx) }})
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{t: t, db: db, redis: node, svc: svc, faults: faults, reg: reg, handler: h, locker: locker, opts: o, spec: newSpecCheck(t)}
}

// do sends a request through the handler and returns the recorder, after
// checking the exchange against openapi.yaml (specCheck.check).
func (a *testAPI) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	a.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return a.spec.serve(a.t, a.handler, req)
}

// admin sends an authorised admin request.
func (a *testAPI) admin(method, path, body string) *httptest.ResponseRecorder {
	a.t.Helper()
	return a.do(method, path, body, "Authorization", "Bearer "+testAdminToken)
}
