package catalog

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Made-up methods are one "other" label value, not a series each.
func TestMadeUpMethodsDoNotCreateSeries(t *testing.T) {
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
