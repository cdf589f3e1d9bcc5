package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/catalog"
	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// ReserveConfig is a run of the reserve workload: two API instances on one
// database, three lock servers and a cache server, all behind fault proxies.
type ReserveConfig struct {
	Seed     uint64
	Duration time.Duration
	// Mode is the instances' reservation mode; "" is fenced. In unsafe mode
	// the checker must find the oversell.
	Mode catalog.Mode
	// Products each start with Stock units; Clients send requests at once.
	Products, Stock, Clients int
	// OutDir receives porcupine's visualisation of a history that is not
	// linearizable; "" writes none.
	OutDir string
	// Faults, when not nil, replaces the schedule drawn from Seed.
	Faults []Fault
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
	reserveTTL   = time.Second
	adminToken   = "torture"
	reserveNodes = 4 // node 0 is the caches' Redis, 1..3 the lock's quorum
)

// instance is one API process of the run.
type instance struct {
	srv    *httptest.Server
	faults *catalog.Injector
}

// RunReserve runs the reserve workload and checks its history: each
// product's free units must be linearizable (porcupine, with a model of the
// stock register), nothing may be oversold, and a replayed key must return
// its reservation.
func RunReserve(ctx context.Context, cfg ReserveConfig) (*Result, error) {
	cfg.defaults()
	env := &Env{}
	defer env.Close()
	srv, err := startServers(ctx, env, func() []*testenv.RedisNode { return testenv.RedisNodes(env, reserveNodes) },
		`INSERT INTO categories (id, slug, name) VALUES (1, 'torture', 'Torture');
		INSERT INTO products (id, category_id, sku, name, price_cents)
			SELECT i, 1, 'T-' || i, 'Product ' || i, 100 FROM generate_series(1, `+strconv.Itoa(cfg.Products)+`) i;
		INSERT INTO inventory (product_id, stock) SELECT id, `+strconv.Itoa(cfg.Stock)+` FROM products;`)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	db, px := srv.db, srv.px
	var insts []*instance
	for range 2 {
		in, err := startInstance(ctx, db, px, cfg.Mode)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		defer in.srv.Close()
		insts = append(insts, in)
	}

	faults := scheduleOr(cfg.Faults, cfg.Seed, cfg.Duration, reserveNodes, nil)
	inj := srv.injector(env)
	inj.onClientPause = func(on bool) {
		f := catalog.Faults{}
		if on {
			f = catalog.Faults{ReservationPauseMS: int(reserveTTL * 3 / 2 / time.Millisecond), ReservationPausePercent: 100}
		}
		for _, in := range insts {
			_ = in.faults.Set(f)
		}
	}
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	start := time.Now()
	h := &reserveHistory{start: start}
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(c)))
		wg.Go(func() { h.client(runCtx, c, r, insts, cfg) })
	}
	recs := inj.run(runCtx, start, faults)
	wg.Wait()

	res := &Result{Workload: "reserve", Seed: cfg.Seed, Duration: time.Since(start), Faults: recs, Ops: h.counts,
		Checks: []string{"free units linearizable per product", "nothing oversold", "replays return the reservation"}}
	res.Anomalies = append(res.Anomalies, h.replayAnomalies...)
	res.Anomalies = append(res.Anomalies, h.checkLinearizable(cfg.OutDir, cfg.Stock)...)
	res.Anomalies = append(res.Anomalies, checkOversold(ctx, insts[0].srv.URL, cfg.Products)...)
	return res, nil
}

// startInstance builds one API instance on db and the proxied servers.
func startInstance(ctx context.Context, db *pgxpool.Pool, px *proxies, mode catalog.Mode) (*instance, error) {
	cache := redis.NewClient(&redis.Options{Addr: px.list[0].Listen, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	var lockNodes []redis.UniversalClient
	for _, x := range px.list[1:] {
		lockNodes = append(lockNodes, redis.NewClient(&redis.Options{Addr: x.Listen, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialerRetries: 1, DialTimeout: 300 * time.Millisecond}))
	}
	reg := prometheus.NewRegistry()
	locker, err := lockx.New(lockNodes, lockx.Options{Name: "inventory", TTL: reserveTTL, Wait: reserveTTL, NoWatchdog: true, Registerer: reg})
	if err != nil {
		return nil, err
	}
	whPool, err := pgxpool.NewWithConfig(ctx, db.Config())
	if err != nil {
		return nil, err
	}
	faults := &catalog.Injector{}
	svc, err := catalog.NewService(catalog.Config{Store: catalog.NewStore(db), Warehouse: catalog.NewWarehouse(whPool, nil), Mode: mode,
		Cache: cache, Locker: locker, Faults: faults, Registerer: reg, CacheTimeout: 200 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	h, err := catalog.NewHandler(catalog.HandlerConfig{Service: svc, Faults: faults, AdminToken: adminToken, Registry: reg})
	if err != nil {
		return nil, err
	}
	return &instance{srv: httptest.NewServer(h), faults: faults}, nil
}

// reserveHistory is the recorded operations of the clients.
type reserveHistory struct {
	start           time.Time
	mu              sync.Mutex
	ops             []stockOp
	counts          map[string]int
	replayAnomalies []Anomaly
}

// stockOp is one operation on a product's free units, for porcupine.
type stockOp struct {
	client        int
	product       int64
	kind          string // reserve, cancel, read
	units         int    // reserve, cancel: the quantity
	outcome       string // done, refused, noop, unknown; read: the units seen
	seen          int
	call, return_ int64
}

func (h *reserveHistory) record(op stockOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	if h.counts == nil {
		h.counts = map[string]int{}
	}
	h.counts[op.kind+"_"+op.outcome]++
}

// client sends requests until ctx ends: new reservations, replays of its
// own, cancels of its own, inventory reads.
func (h *reserveHistory) client(ctx context.Context, id int, r *rand.Rand, insts []*instance, cfg ReserveConfig) {
	hc := &http.Client{Timeout: 10 * time.Second}
	type held struct {
		id      int64
		key     string
		product int64
		units   int
	}
	var mine []held
	for seq := 0; ctx.Err() == nil; seq++ {
		base := insts[r.IntN(len(insts))].srv.URL
		product := int64(1 + r.IntN(cfg.Products))
		now := func() int64 { return time.Since(h.start).Nanoseconds() }
		switch p := r.IntN(100); {
		case p < 50 || len(mine) == 0:
			units, key := 1+r.IntN(3), fmt.Sprintf("c%d-%d", id, seq)
			op := stockOp{client: id, product: product, kind: "reserve", units: units, call: now()}
			code, body := post(hc, base+"/v1/reservations", fmt.Sprintf(`{"product_id": %d, "quantity": %d, "idempotency_key": %q}`, product, units, key))
			op.return_ = now()
			var got struct {
				ID   int64  `json:"id"`
				Type string `json:"type"`
			}
			_ = json.Unmarshal(body, &got)
			switch {
			case code == http.StatusCreated:
				op.outcome = "done"
				mine = append(mine, held{got.ID, key, product, units})
			case code == http.StatusConflict && got.Type == "/problems/insufficient-stock":
				op.outcome = "refused"
			case code == http.StatusServiceUnavailable && got.Type == "/problems/busy":
				op.outcome = "noop" // the lock was never taken
			default:
				op.outcome = "unknown" // fenced after a move, cut off, 503 unknown
			}
			h.record(op)
		case p < 65:
			m := mine[r.IntN(len(mine))]
			code, body := post(hc, base+"/v1/reservations", fmt.Sprintf(`{"product_id": %d, "quantity": %d, "idempotency_key": %q}`, m.product, m.units, m.key))
			var got struct {
				ID int64 `json:"id"`
			}
			_ = json.Unmarshal(body, &got)
			h.mu.Lock()
			h.counts["replay_"+strconv.Itoa(code)]++
			if code == http.StatusCreated || (code == http.StatusOK && got.ID != m.id) {
				h.replayAnomalies = append(h.replayAnomalies, Anomaly{Check: "replays return the reservation",
					Detail: fmt.Sprintf("key %q of reservation %d replayed: %d, reservation %d", m.key, m.id, code, got.ID)})
			}
			h.mu.Unlock()
		case p < 85:
			i := r.IntN(len(mine))
			m := mine[i]
			mine = append(mine[:i], mine[i+1:]...)
			op := stockOp{client: id, product: m.product, kind: "cancel", units: m.units, call: now()}
			code, _ := post(hc, base+"/v1/reservations/"+strconv.FormatInt(m.id, 10)+"/cancel", "")
			op.return_ = now()
			op.outcome = "unknown"
			if code == http.StatusOK {
				op.outcome = "done"
			}
			h.record(op)
		default:
			op := stockOp{client: id, product: product, kind: "read", call: now()}
			resp, err := hc.Get(base + "/v1/products/" + strconv.FormatInt(product, 10) + "/inventory")
			op.return_ = now()
			var inv catalog.Inventory
			if err == nil {
				if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&inv) == nil {
					op.outcome, op.seen = "done", inv.Available
					h.record(op)
				}
				resp.Body.Close()
			}
		}
	}
}

func post(hc *http.Client, url, body string) (int, []byte) {
	resp, err := hc.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

// checkOversold reads every product's inventory after the run.
func checkOversold(ctx context.Context, base string, products int) []Anomaly {
	var out []Anomaly
	for p := 1; p <= products; p++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/products/%d/inventory", base, p), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out = append(out, Anomaly{Check: "nothing oversold", Detail: fmt.Sprintf("product %d: inventory unreadable: %v", p, err)})
			continue
		}
		var inv catalog.Inventory
		err = json.NewDecoder(resp.Body).Decode(&inv)
		resp.Body.Close()
		if err != nil || inv.Oversold > 0 {
			out = append(out, Anomaly{Check: "nothing oversold", Detail: fmt.Sprintf("product %d: %+v (%v)", p, inv, err)})
		}
	}
	return out
}
