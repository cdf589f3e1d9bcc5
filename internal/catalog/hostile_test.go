package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Made-up methods are one "other" label value, not a series each.
func TestMadeUpMethodsDoNotCreateSeries(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	a.do(http.MethodGet, "/v1/products/1", "")
	before := testutil.CollectAndCount(a.reg, "http_requests_total")
	for i := range 200 {
		a.do("M"+strconv.Itoa(i), "/v1/products/1", "")
	}
	after := testutil.CollectAndCount(a.reg, "http_requests_total")
	if after-before > 2 { // "other" with the status codes the made-up methods got
		t.Fatalf("200 made-up methods added %d series to http_requests_total, want at most 2", after-before)
	}
}

// A reservation for a product that does not exist is answered 404 without
// taking a lock: no key is left on the lock servers.
func TestReservationOfAnUnknownProductLeavesNoLockKeys(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	for i := range 50 {
		body := `{"product_id": ` + strconv.Itoa(1_000_000_000+i) + `, "quantity": 1, "idempotency_key": "unknown-` + strconv.Itoa(i) + `"}`
		checkProblem(t, a.do(http.MethodPost, "/v1/reservations", body), http.StatusNotFound, "/problems/not-found")
	}
	keys, err := a.redis.Client().Keys(context.Background(), "{lockx:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("%d lock keys left by reservations of unknown products (e.g. %q), want 0", len(keys), keys[0])
	}
}

// NUL bytes and control characters in any text input are refused with 422
// problem+json (Postgres would refuse NUL with an error that became a 500),
// and nothing is changed.
func TestNULAndControlCharactersAreRefused(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	auth := []string{"Authorization", "Bearer " + testAdminToken}
	for name, c := range map[string]struct {
		method, path, body string
		header             []string
	}{
		"search q":                {method: http.MethodGet, path: "/v1/search?q=lamp%00"},
		"search q control":        {method: http.MethodGet, path: "/v1/search?q=la%1Bmp"},
		"idempotency key in body": {method: http.MethodPost, path: "/v1/reservations", body: `{"product_id": 1, "quantity": 1, "idempotency_key": "k\u0000"}`},
		"idempotency key header":  {method: http.MethodPost, path: "/v1/reservations", body: `{"product_id": 1, "quantity": 1}`, header: []string{"Idempotency-Key", "k\x01"}},
		"product name":            {method: http.MethodPatch, path: "/v1/products/1", body: `{"name": "lamp\u0000"}`, header: auth},
		"product description":     {method: http.MethodPatch, path: "/v1/products/1", body: `{"description": "a\u0000b"}`, header: auth},
		"attribute key":           {method: http.MethodPatch, path: "/v1/products/1", body: `{"attributes": {"col\u0000or": "red"}}`, header: auth},
		"attribute value":         {method: http.MethodPatch, path: "/v1/products/1", body: `{"attributes": {"color": "re\u0000d"}}`, header: auth},
		"nested attribute value":  {method: http.MethodPatch, path: "/v1/products/1", body: `{"attributes": {"sizes": ["s", "m\u0000"]}}`, header: auth},
	} {
		t.Run(name, func(t *testing.T) {
			checkProblem(t, a.do(c.method, c.path, c.body, c.header...), http.StatusUnprocessableEntity, "/problems/invalid-parameter")
		})
	}
	// Tab and line breaks are fine in a description.
	rec := a.do(http.MethodPatch, "/v1/products/1", `{"description": "line one\nline\ttwo"}`, auth...)
	if rec.Code != http.StatusOK {
		t.Fatalf("a description with a line break: %d %s", rec.Code, rec.Body.String())
	}
}

// /readyz reports only what the API cannot serve without; /health reports
// every dependency, without internals, and always answers 200.
func TestReadinessAndHealth(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	h, err := NewHandler(HandlerConfig{Service: a.svc, Registry: prometheus.NewRegistry(),
		Ready: func(context.Context) error { return nil },
		Checks: map[string]func(context.Context) error{
			"postgres":    func(context.Context) error { return nil },
			"cache_redis": func(context.Context) error { return errors.New("dial tcp 10.1.2.3:6379: connect: connection refused") },
		}})
	if err != nil {
		t.Fatal(err)
	}
	spec := newSpecCheck(t)
	get := func(path string) *httptest.ResponseRecorder {
		return spec.serve(t, h, httptest.NewRequest(http.MethodGet, path, nil))
	}
	if rec := get("/readyz"); rec.Code != http.StatusOK {
		t.Fatalf("/readyz with the cache Redis down: %d, want 200", rec.Code)
	}
	rec := get("/health")
	var got struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("/health: %d %s (%v)", rec.Code, rec.Body.String(), err)
	}
	if got.Status != "degraded" || got.Checks["cache_redis"] != "unavailable" || got.Checks["postgres"] != "ok" {
		t.Fatalf("/health = %+v", got)
	}
	if strings.Contains(rec.Body.String(), "10.1.2.3") {
		t.Fatalf("/health shows internals: %s", rec.Body.String())
	}
}

// Changing a product needs the admin token; the scheme is case-insensitive.
func TestProductWritesNeedAuthority(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	body := `{"price_cents": 4242}`
	checkProblem(t, a.do(http.MethodPatch, "/v1/products/3", body), http.StatusUnauthorized, "/problems/unauthorized")
	checkProblem(t, a.do(http.MethodPatch, "/v1/products/3", body, "Authorization", "Bearer wrong"), http.StatusUnauthorized, "/problems/unauthorized")
	if n := a.queryInt("SELECT count(*) FROM products WHERE id = 3 AND price_cents = 4242"); n != 0 {
		t.Fatal("an unauthorised PATCH changed the product")
	}
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		if rec := a.do(http.MethodPatch, "/v1/products/3", body, "Authorization", scheme+" "+testAdminToken); rec.Code != http.StatusOK {
			t.Fatalf("PATCH with scheme %q: %d %s", scheme, rec.Code, rec.Body.String())
		}
	}
}

// A search with exclusions only would scan and rank the whole catalog: it is
// refused with 422, and one that Postgres reduces to exclusions (a stop word
// and an exclusion) matches nothing without a scan.
func TestSearchWithoutAPositiveTermIsRefused(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	for _, q := range []string{"-zzzz", "-lamp%20-mug", "%22-x%22", "or"} {
		checkProblem(t, a.do(http.MethodGet, "/v1/search?q="+q, ""), http.StatusUnprocessableEntity, "/problems/invalid-parameter")
	}
	// "a" and "the" are stop words: Postgres drops them, leaving exclusions
	// only; the query answers nothing, and its plan is a one-time filter
	// "false" (no scan; checked with EXPLAIN ANALYZE when this was written).
	for _, q := range []string{"a or -b", "the -lamp"} {
		hits, err := a.svc.store.Search(context.Background(), q, 20)
		if err != nil || len(hits) != 0 {
			t.Fatalf("store search %q: %d hits, %v; want none", q, len(hits), err)
		}
	}
	if hits, err := a.svc.store.Search(context.Background(), "steel -mug", 20); err != nil || len(hits) == 0 {
		t.Fatalf("a search with a term and an exclusion: %d hits, %v; want some", len(hits), err)
	}
}

// A request that runs out of its server-side time answers 503 problem+json
// with Retry-After, and so does a query that Postgres cancelled (its
// statement_timeout) or a recompute that ran out of its time, never 500.
func TestRequestsAndQueriesRunOutOfTimeAs503(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	h, err := NewHandler(HandlerConfig{Service: a.svc, Faults: a.faults, Registry: prometheus.NewRegistry(), RequestTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// 20 s of injected latency: a request its 100ms deadline did not end
	// would take that long, however fast or slow the machine.
	const latency = 20 * time.Second
	if err := a.faults.Set(Faults{DBLatencyMS: int(latency / time.Millisecond), DBLatencyPercent: 100}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rec := a.spec.serve(t, h, httptest.NewRequest(http.MethodGet, "/v1/categories/2/stats", nil))
	if took := time.Since(start); took >= latency/2 {
		t.Fatalf("the request took %v: its 100ms deadline did not end it", took)
	}
	checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}

	hh := &handlers{log: slog.New(slog.DiscardHandler)}
	rec = httptest.NewRecorder()
	hh.fail(rec, httptest.NewRequest(http.MethodGet, "/v1/search?q=x", nil), fmt.Errorf("search: %w", &pgconn.PgError{Code: "57014"}))
	checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")

	// A recompute that ran out of its own time (cachex's LoadTimeout, which
	// a ttl stampede on a saturated pool reaches) while the request still
	// had time: the dependency is slow, not the server broken.
	rec = httptest.NewRecorder()
	hh.fail(rec, httptest.NewRequest(http.MethodGet, "/v1/categories/1/stats", nil), fmt.Errorf("catalog: category_stats: %w", context.DeadlineExceeded))
	checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")
}

// JSON field names match exactly: PRODUCT_ID is an unknown field.
func TestJSONFieldNamesAreCaseSensitive(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	for _, body := range []string{
		`{"PRODUCT_ID": 1, "quantity": 1, "idempotency_key": "case-1"}`,
		`{"product_id": 1, "Quantity": 1, "idempotency_key": "case-2"}`,
	} {
		checkProblem(t, a.do(http.MethodPost, "/v1/reservations", body), http.StatusBadRequest, "/problems/bad-request")
	}
	checkProblem(t, a.admin(http.MethodPatch, "/v1/products/1", `{"Name": "x"}`), http.StatusBadRequest, "/problems/bad-request")
	if n := a.queryInt("SELECT count(*) FROM reservations"); n != 0 {
		t.Fatalf("%d reservations made from misspelt fields", n)
	}
}

// ids= is refused by counting its separators, before it is split: a
// megabyte of commas costs no slice of a million strings.
func TestIDsAreCountedBeforeSplitting(t *testing.T) {
	commas := strings.Repeat(",", 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ParseIDs(commas)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a million ids accepted")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Fatalf("ParseIDs allocated %d bytes to refuse it", grew)
	}
}

// A replay of a finished reservation is answered without taking the
// product's lock: it answers even while another request holds the lock.
func TestReplayNeedsNoLock(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{}) // a replay that took the lock would wait lockWait, then answer 503
	a.setInventory(21, 100, 0)
	body := reserveBody(21, 1, "replay-no-lock")
	if rec := a.do(http.MethodPost, "/v1/reservations", body); rec.Code != http.StatusCreated {
		t.Fatalf("first: %d %s", rec.Code, rec.Body.String())
	}
	held, err := a.locker.Acquire(context.Background(), "21") // another request holds the product's lock
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if rec := a.do(http.MethodPost, "/v1/reservations", body); rec.Code != http.StatusOK {
		t.Fatalf("replay while the lock is held: %d %s; want 200 with the first reservation", rec.Code, rec.Body.String())
	}
	p := checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(21, 2, "replay-no-lock")), http.StatusUnprocessableEntity, "/problems/idempotency-mismatch")
	if want := `key "replay-no-lock" holds 1 of product 21, the request wants 2 of product 21`; !strings.Contains(p.Detail, want) {
		t.Fatalf("mismatch detail %q, want it to say %q", p.Detail, want)
	}
}

// A client that goes away while its reservation waits for the lock is
// counted as cancelled (code 499), not as a lock timeout or a 503.
func TestAClientThatLeavesIsCountedAsCancelled(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{lockWait: time.Minute}) // the client leaves long before
	a.setInventory(21, 100, 0)
	held, err := a.locker.Acquire(context.Background(), "21")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/reservations", strings.NewReader(reserveBody(21, 1, "leaves"))).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	rec := a.spec.serve(t, a.handler, req)
	if rec.Code != 499 {
		t.Fatalf("status %d, want 499", rec.Code)
	}
	if n := testutil.ToFloat64(a.svc.reservations.WithLabelValues("cancelled")); n != 1 {
		t.Fatalf("cancelled = %v, want 1", n)
	}
	if n := testutil.ToFloat64(a.svc.reservations.WithLabelValues("lock_timeout")); n != 0 {
		t.Fatalf("lock_timeout = %v, want 0", n)
	}
}

// Problem details speak the API's terms: no Go type names, no package or
// query prefixes, no host:port.
func TestProblemDetailsCarryNoInternals(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	a.setInventory(21, 1, 0)
	h, err := NewHandler(HandlerConfig{Service: a.svc, Registry: prometheus.NewRegistry(),
		Ready: func(context.Context) error { return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused") }})
	if err != nil {
		t.Fatal(err)
	}
	ready := a.spec.serve(t, h, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	recs := map[string]*httptest.ResponseRecorder{
		"readyz":           ready,
		"wrong type":       a.do(http.MethodPost, "/v1/reservations", `{"product_id": "21", "quantity": 1, "idempotency_key": "t"}`),
		"not an object":    a.do(http.MethodPost, "/v1/reservations", `[1]`),
		"syntax":           a.do(http.MethodPost, "/v1/reservations", `{"product_id": 21,`),
		"insufficient":     a.do(http.MethodPost, "/v1/reservations", reserveBody(21, 5, "too-many")),
		"unknown strategy": a.admin(http.MethodPut, "/admin/caches/product", `{"strategy": "lru"}`),
		"patch wrong type": a.admin(http.MethodPatch, "/v1/products/1", `{"price_cents": "12"}`),
	}
	for name, rec := range recs {
		var p Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Detail == "" {
			t.Errorf("%s: %d %s: want a problem with a detail", name, rec.Code, rec.Body.String())
			continue
		}
		for _, internal := range []string{"Go ", "int64", "struct", "catalog:", "cachex:", "lockx:", "127.0.0.1", "json:", "reserve:"} {
			if strings.Contains(p.Detail, internal) {
				t.Errorf("%s: detail %q shows %q", name, p.Detail, internal)
			}
		}
	}
}

// HEAD answers on every GET route, as GET would but without a body.
func TestHEADOnEveryGETRoute(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	for _, path := range []string{"/healthz", "/v1/products/1", "/v1/products?ids=1,2", "/v1/categories/1/stats", "/v1/search?q=oak"} {
		get, head := a.do(http.MethodGet, path, ""), a.do(http.MethodHead, path, "")
		if head.Code != get.Code || head.Code != http.StatusOK || head.Header().Get("Content-Type") != get.Header().Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q; GET: %d %q", path, head.Code, head.Header().Get("Content-Type"), get.Code, get.Header().Get("Content-Type"))
		}
	}
	rec := a.do(http.MethodDelete, "/v1/products/1", "")
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "HEAD") {
		t.Errorf("405 Allow = %q, want HEAD listed", allow)
	}
}

// The idempotency key's limit is 200 characters everywhere (code, OpenAPI,
// the table's CHECK): a key of 200 two-byte characters is accepted, 201
// characters are not.
func TestIdempotencyKeyLimitIsInCharacters(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	a.setInventory(21, 10, 0)
	if rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(21, 1, strings.Repeat("é", MaxIdempotencyKeyLen))); rec.Code != http.StatusCreated {
		t.Fatalf("a key of %d two-byte characters: %d %s", MaxIdempotencyKeyLen, rec.Code, rec.Body.String())
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(21, 1, strings.Repeat("é", MaxIdempotencyKeyLen+1))),
		http.StatusUnprocessableEntity, "/problems/invalid-parameter")
}
