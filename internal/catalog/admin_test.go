package catalog

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stampede-lab/stampede/internal/cachex"
)

func TestAdminAuth(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	paths := []struct{ method, path, body string }{
		{"GET", "/admin/caches", ""},
		{"PUT", "/admin/caches/product", `{"strategy": "none"}`},
		{"GET", "/admin/faults", ""},
		{"PUT", "/admin/faults", `{"db_latency_ms": 10, "db_latency_percent": 100}`},
		{"PATCH", "/admin/faults", `{"db_latency_ms": 10}`},
		{"POST", "/admin/reset", ""},
		{"GET", "/admin/reservation-mode", ""},
		{"PUT", "/admin/reservation-mode", `{"mode": "unsafe"}`},
		{"PUT", "/admin/inventory/1", `{"stock": 0}`},
		{"GET", "/admin/nope", ""},
	}
	for _, p := range paths {
		for name, hdr := range map[string][]string{
			"no token":       nil,
			"wrong token":    {"Authorization", "Bearer wrong"},
			"token prefix":   {"Authorization", "Bearer " + testAdminToken[:4]},
			"token suffixed": {"Authorization", "Bearer " + testAdminToken + "x"},
			"basic scheme":   {"Authorization", "Basic " + testAdminToken},
			"bare token":     {"Authorization", testAdminToken},
		} {
			rec := a.do(p.method, p.path, p.body, hdr...)
			checkProblem(t, rec, http.StatusUnauthorized, "/problems/unauthorized")
			if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("%s %s, %s: WWW-Authenticate = %q", p.method, p.path, name, got)
			}
		}
	}
	// Nothing was changed by the refused requests.
	if s := a.svc.Caches()["product"].Strategy(); s != cachex.XFetch {
		t.Errorf("product strategy = %q after refused requests", s)
	}
	if f := a.faults.Get(); f != (Faults{}) {
		t.Errorf("faults = %+v after refused requests", f)
	}
	checkProblem(t, a.admin(http.MethodGet, "/admin/nope", ""), http.StatusNotFound, "/problems/not-found")
	checkProblem(t, a.admin(http.MethodDelete, "/admin/faults", ""), http.StatusMethodNotAllowed, "/problems/method-not-allowed")

	// Without a token configured the admin API does not exist, whatever the
	// request carries.
	h, err := NewHandler(HandlerConfig{Service: a.svc, Faults: a.faults, AdminToken: "", Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer "}, {"Authorization", "Bearer " + testAdminToken}} {
		for _, p := range paths {
			req := httptest.NewRequest(p.method, p.path, strings.NewReader(p.body))
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			checkProblem(t, a.spec.serve(t, h, req), http.StatusNotFound, "/problems/admin-disabled")
		}
	}
	// The public API of that handler works.
	decodeJSON(t, a.spec.serve(t, h, httptest.NewRequest(http.MethodGet, "/v1/products/1", nil)), http.StatusOK, nil)
}

func TestAdminCaches(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	var all map[string]CacheSettings
	decodeJSON(t, a.admin(http.MethodGet, "/admin/caches", ""), http.StatusOK, &all)
	if len(all) != 4 {
		t.Errorf("caches = %v, want 4", all)
	}
	for _, name := range []string{"product", "category_stats", "top_products", "search"} {
		c, ok := all[name]
		if !ok || c.Strategy != cachex.XFetch || c.Beta == nil || *c.Beta != 1 {
			t.Errorf("cache %q = %+v (listed %v), want xfetch beta 1", name, c, ok)
		}
	}

	recomputes := func() float64 {
		return metricValue(t, a.reg, "cachex_recomputes_total", map[string]string{"cache": "category_stats"})
	}
	read := func() {
		t.Helper()
		decodeJSON(t, a.do(http.MethodGet, "/v1/categories/4/stats", ""), http.StatusOK, nil)
	}
	// xfetch: after the first read, reads are served from Redis.
	read()
	n := recomputes()
	for range 3 {
		read()
	}
	if got := recomputes(); got != n {
		t.Errorf("xfetch: %v recomputes for 3 cached reads, want 0", got-n)
	}

	var set CacheSettings
	decodeJSON(t, a.admin(http.MethodPut, "/admin/caches/category_stats", `{"strategy": "none"}`), http.StatusOK, &set)
	if set.Strategy != cachex.None || set.Beta == nil || *set.Beta != 1 {
		t.Errorf("PUT strategy none answered %+v", set)
	}
	if s := a.svc.Caches()["category_stats"].Strategy(); s != cachex.None {
		t.Errorf("strategy = %q after PUT", s)
	}
	for i := range 3 {
		n := recomputes()
		read()
		if got := recomputes(); got != n+1 {
			t.Errorf("none: read %d made %v recomputes, want 1 (every read calls the database)", i, got-n)
		}
	}
	// Other caches are untouched.
	decodeJSON(t, a.admin(http.MethodGet, "/admin/caches", ""), http.StatusOK, &all)
	if all["product"].Strategy != cachex.XFetch || all["category_stats"].Strategy != cachex.None {
		t.Errorf("caches after PUT = %+v", all)
	}

	// beta alone, then strategy back; each PUT changes only what it names.
	decodeJSON(t, a.admin(http.MethodPut, "/admin/caches/category_stats", `{"beta": 2.5}`), http.StatusOK, &set)
	if set.Strategy != cachex.None || *set.Beta != 2.5 {
		t.Errorf("PUT beta answered %+v", set)
	}
	decodeJSON(t, a.admin(http.MethodPut, "/admin/caches/category_stats", `{"strategy": "ttl", "beta": 0.5}`), http.StatusOK, &set)
	if set.Strategy != cachex.TTL || *set.Beta != 0.5 {
		t.Errorf("PUT ttl beta 0.5 answered %+v", set)
	}
	if c := a.svc.Caches()["category_stats"]; c.Strategy() != cachex.TTL || c.Beta() != 0.5 {
		t.Errorf("cache = %q beta %v", c.Strategy(), c.Beta())
	}

	for _, c := range []struct {
		name, path, body string
		status           int
		typ              string
	}{
		{"invalid strategy", "/admin/caches/product", `{"strategy": "lru"}`, 422, "/problems/invalid-parameter"},
		{"negative beta", "/admin/caches/product", `{"beta": -1}`, 422, "/problems/invalid-parameter"},
		{"zero beta", "/admin/caches/product", `{"beta": 0}`, 422, "/problems/invalid-parameter"},
		{"huge beta", "/admin/caches/product", `{"beta": 101}`, 422, "/problems/invalid-parameter"},
		{"beta string", "/admin/caches/product", `{"beta": "1"}`, 400, "/problems/bad-request"},
		{"unknown field", "/admin/caches/product", `{"strategy": "none", "ttl": 5}`, 400, "/problems/bad-request"},
		{"malformed", "/admin/caches/product", `{"strategy": `, 400, "/problems/bad-request"},
		{"unknown cache", "/admin/caches/sessions", `{"strategy": "none"}`, 404, "/problems/not-found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkProblem(t, a.admin(http.MethodPut, c.path, c.body), c.status, c.typ)
		})
	}
	if c := a.svc.Caches()["product"]; c.Strategy() != cachex.XFetch || c.Beta() != 1 {
		t.Errorf("product cache = %q beta %v after refused PUTs", c.Strategy(), c.Beta())
	}
}

func TestAdminFaults(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	var f Faults
	decodeJSON(t, a.admin(http.MethodGet, "/admin/faults", ""), http.StatusOK, &f)
	if f != (Faults{}) {
		t.Errorf("faults at start = %+v, want all off", f)
	}
	want := Faults{DBLatencyMS: 7, DBLatencyPercent: 30, CacheRedisDownPercent: 0, ReservationPauseMS: 900, ReservationPausePercent: 5}
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults",
		`{"db_latency_ms": 7, "db_latency_percent": 30, "reservation_pause_ms": 900, "reservation_pause_percent": 5}`), http.StatusOK, &f)
	if f != want {
		t.Errorf("PUT answered %+v, want %+v", f, want)
	}
	decodeJSON(t, a.admin(http.MethodGet, "/admin/faults", ""), http.StatusOK, &f)
	if f != want || a.faults.Get() != want {
		t.Errorf("GET after PUT = %+v (injector %+v), want %+v", f, a.faults.Get(), want)
	}
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"percent 101", `{"db_latency_ms": 5, "db_latency_percent": 101}`, 422},
		{"percent negative", `{"cache_redis_down_percent": -1}`, 422},
		{"pause percent 101", `{"reservation_pause_percent": 101}`, 422},
		{"ms negative", `{"db_latency_ms": -5}`, 422},
		{"ms over a minute", `{"reservation_pause_ms": 60001}`, 422},
		{"unknown knob", `{"redis_latency_ms": 5}`, 400},
		{"wrong type", `{"db_latency_ms": "5"}`, 400},
		{"malformed", `{`, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			typ := "/problems/invalid-parameter"
			if c.status == 400 {
				typ = "/problems/bad-request"
			}
			checkProblem(t, a.admin(http.MethodPut, "/admin/faults", c.body), c.status, typ)
		})
	}
	if got := a.faults.Get(); got != want {
		t.Errorf("faults after refused PUTs = %+v, want %+v", got, want)
	}
	// An empty object turns everything off.
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, &f)
	if f != (Faults{}) {
		t.Errorf("PUT {} answered %+v", f)
	}
}

// TestAdminDBLatency checks the database latency knob reaches the queries
// behind the API.
func TestAdminDBLatency(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	decodeJSON(t, a.admin(http.MethodPut, "/admin/caches/category_stats", `{"strategy": "none"}`), http.StatusOK, nil)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"db_latency_ms": 50, "db_latency_percent": 100}`), http.StatusOK, nil)
	// The delay is in place: it waits, so it sees the cancelled context.
	if err := a.faults.DBDelay(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("DBDelay with the knob on = %v, want it to wait", err)
	}
	start := time.Now()
	decodeJSON(t, a.do(http.MethodGet, "/v1/categories/5/stats", ""), http.StatusOK, nil)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("stats read with 50ms of injected latency took %v", d)
	}

	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"db_latency_ms": 0, "db_latency_percent": 100}`), http.StatusOK, nil)
	if err := a.faults.DBDelay(cancelled); err != nil {
		t.Errorf("DBDelay with the knob off = %v, want no wait", err)
	}
	decodeJSON(t, a.do(http.MethodGet, "/v1/categories/5/stats", ""), http.StatusOK, nil)
}

// TestAdminCacheRedisDown checks the cache_redis_down_percent knob makes
// the caches bypass Redis while the API keeps answering.
func TestAdminCacheRedisDown(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	bypass := func() float64 {
		return metricValue(t, a.reg, "cachex_gets_total", map[string]string{"cache": "product", "result": "bypass"})
	}
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"cache_redis_down_percent": 100}`), http.StatusOK, nil)
	for range 3 {
		var p Product
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/8", ""), http.StatusOK, &p)
		if p.ID != 8 {
			t.Errorf("product = %d", p.ID)
		}
	}
	if n := bypass(); n != 3 {
		t.Errorf("%v bypassed product reads, want 3", n)
	}
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, nil)
	n := bypass()
	// The breaker lets Redis back in after its cooldown.
	waitFor(t, time.Minute, "product reads to use Redis again", func() bool {
		decodeJSON(t, a.do(http.MethodGet, "/v1/products/8", ""), http.StatusOK, nil)
		return metricValue(t, a.reg, "cachex_gets_total", map[string]string{"cache": "product", "result": "hit"}) > 0
	})
	if bypass() == n {
		return
	}
	t.Logf("%v more bypassed reads while the breaker cooled down", bypass()-n)
}

// TestAdminReservationMode: the mode switches per instance, is exported as
// catalog_reservation_mode, and refuses names it does not know.
func TestAdminReservationMode(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	gauge := func(m Mode) float64 {
		return metricValue(t, a.reg, "catalog_reservation_mode", map[string]string{"mode": string(m)})
	}
	var got ModeSetting
	decodeJSON(t, a.admin(http.MethodGet, "/admin/reservation-mode", ""), http.StatusOK, &got)
	if got.Mode != ModeFenced || gauge(ModeFenced) != 1 || gauge(ModeUnsafe) != 0 {
		t.Fatalf("default mode %q, gauge fenced %v: want fenced, 1", got.Mode, gauge(ModeFenced))
	}
	a.setMode(ModeLock)
	if gauge(ModeLock) != 1 || gauge(ModeFenced) != 0 || gauge(ModeUnsafe) != 0 {
		t.Errorf("gauge after switching to lock: unsafe %v, lock %v, fenced %v", gauge(ModeUnsafe), gauge(ModeLock), gauge(ModeFenced))
	}
	for _, body := range []string{`{"mode": "Fenced"}`, `{"mode": ""}`, `{}`, `{"mode": "none\u0000"}`} {
		checkProblem(t, a.admin(http.MethodPut, "/admin/reservation-mode", body), http.StatusUnprocessableEntity, "/problems/invalid-parameter")
	}
	if a.svc.Mode() != ModeLock {
		t.Errorf("a refused change moved the mode to %q", a.svc.Mode())
	}
}

// TestAdminSetStock: a stocktake sets the stock and stocks the warehouse
// with what is not reserved.
func TestAdminSetStock(t *testing.T) {
	t.Parallel()
	const product = 47
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 4, "before-stocktake")), http.StatusCreated, nil)
	// Lose a write behind the API's back: the warehouse's count drifts.
	a.queryInt("WITH u AS (UPDATE warehouse SET available = 9 WHERE product_id = $1 RETURNING 1) SELECT count(*) FROM u", product)

	var inv Inventory
	decodeJSON(t, a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 20}`), http.StatusOK, &inv)
	if inv.Stock != 20 || inv.Reserved != 4 || inv.Available != 16 {
		t.Errorf("after the stocktake: %+v, want stock 20, reserved 4, available 16", inv)
	}
	for body, typ := range map[string]string{
		`{"stock": -1}`:      "/problems/invalid-parameter",
		`{"stock": 1000001}`: "/problems/invalid-parameter",
		`{}`:                 "/problems/invalid-parameter",
		`{"stock": "1"}`:     "/problems/bad-request",
	} {
		rec := a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), body)
		checkProblem(t, rec, map[string]int{"/problems/invalid-parameter": 422, "/problems/bad-request": 400}[typ], typ)
	}
	checkProblem(t, a.admin(http.MethodPut, "/admin/inventory/999999", `{"stock": 1}`), http.StatusNotFound, "/problems/not-found")
	if keys := a.redis.Client().Keys(context.Background(), "*lockx*999999*").Val(); len(keys) != 0 {
		t.Errorf("a stocktake of an unknown product left lock keys %q", keys)
	}
}
