package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// inventory reads a product's inventory through the API.
func (a *testAPI) inventory(productID int64) Inventory {
	a.t.Helper()
	var inv Inventory
	decodeJSON(a.t, a.do(http.MethodGet, "/v1/products/"+itoa(productID)+"/inventory", ""), http.StatusOK, &inv)
	return inv
}

// doWithContext sends a request whose context the test controls.
func (a *testAPI) doWithContext(ctx context.Context, method, path, body string) *httptest.ResponseRecorder {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body)).WithContext(ctx)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return a.spec.serve(a.t, a.handler, req)
}

// crashAfter makes the next write step named step (writeSteps) of a panic
// with crashed right after it, as a process that dies there.
func (a *testAPI) crashAfter(step string) (disarm func()) {
	var once sync.Once
	prevS, prevW := a.svc.store.observe, a.svc.warehouse.observe
	wrap := func(prev Observer) Observer {
		return func(q string, d time.Duration) {
			if prev != nil {
				prev(q, d)
			}
			if q == step {
				once.Do(func() { panic(crashed{q}) })
			}
		}
	}
	a.svc.store.observe, a.svc.warehouse.observe = wrap(prevS), wrap(prevW)
	return func() { a.svc.store.observe, a.svc.warehouse.observe = prevS, prevW }
}

// crashes runs f and reports whether it crashed.
func crashes(f func()) (crashedHere bool) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(crashed); !ok {
				panic(v)
			}
			crashedHere = true
		}
	}()
	f()
	return false
}

// TestCancelByAClientThatLeavesFinishes: a cancel whose client hangs up
// right after the catalog ended the hold still gives the units back (on a
// context of its own), once; a retried cancel changes nothing.
func TestCancelByAClientThatLeavesFinishes(t *testing.T) {
	t.Parallel()
	const product = 52
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-cancel")), http.StatusCreated, &r)

	ctx, leave := context.WithCancel(context.Background())
	_, disarm := a.armCut(1, func(string) { leave() })
	a.doWithContext(ctx, http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", "")
	disarm()
	if inv := a.inventory(product); inv.Available != 5 || inv.Reserved != 0 {
		t.Errorf("after the cancel whose client left: %+v, want 5 free, none reserved", inv)
	}
	var got Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, &got)
	if inv := a.inventory(product); got.Status != StatusCancelled || inv.Available != 5 || inv.Reserved != 0 {
		t.Errorf("after the retried cancel: %s, %+v; want cancelled, 5 free, none reserved", got.Status, inv)
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 6, "too-many")), http.StatusConflict, "/problems/insufficient-stock")
}

// TestInterruptedSweepGivesBackOnce: a sweep whose process dies right after
// the catalog expired a hold leaves its give due; the units are out of
// sale, not free twice; another instance's reconciler gives them back once.
func TestInterruptedSweepGivesBackOnce(t *testing.T) {
	t.Parallel()
	const product = 53
	a := newTestAPI(t, apiOptions{})
	b := a.sibling()
	a.setInventory(product, 5, 0)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-sweep")), http.StatusCreated, nil)
	a.expireAll(product)

	disarm := a.crashAfter(QueryExpire)
	if !crashes(func() { _, _ = a.svc.SweepExpired(context.Background()) }) {
		t.Fatal("the sweep did not crash after expiring the hold: the test proves nothing")
	}
	disarm()
	if inv := a.inventory(product); inv.Available != 2 || inv.Reserved != 0 {
		t.Fatalf("after the crashed sweep: %+v, want the 3 units neither held nor free", inv)
	}
	if n, err := b.svc.SweepExpired(context.Background()); n != 0 || err != nil {
		t.Fatalf("the other instance's sweep ended %d holds (%v), want 0: the hold had ended", n, err)
	}
	for range 2 {
		if _, err := b.svc.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if inv := a.inventory(product); inv.Available != 5 || inv.Reserved != 0 {
		t.Errorf("after the other instance reconciled twice: %+v, want 5 free once, none reserved", inv)
	}
	if n := metricValue(t, b.reg, "catalog_reconciled_total", map[string]string{"action": "give"}); n != 1 {
		t.Errorf(`catalog_reconciled_total{action="give"} = %v, want 1`, n)
	}
}

// TestRetryAfterACutOffReservationTakesOnce: a reservation whose process
// dies after the warehouse gave it the units leaves its intent, holding
// nothing; a retry with another quantity under the key is refused, and the
// retry with the same one finds the take applied, takes no more and
// answers 201. A stocktake makes an intent whose take was applied active,
// and its late retry answers it.
func TestRetryAfterACutOffReservationTakesOnce(t *testing.T) {
	t.Parallel()
	const product = 54
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	disarm := a.crashAfter(QueryWarehouseWrite)
	reserve := func(qty int, key string) func() {
		return func() {
			_, _, _ = a.svc.Reserve(context.Background(), ReserveRequest{ProductID: product, Quantity: qty, IdempotencyKey: key})
		}
	}
	if !crashes(reserve(3, "cut-reserve")) {
		t.Fatal("the reservation did not crash after its take: the test proves nothing")
	}
	disarm()
	if inv := a.inventory(product); inv.Available != 2 || inv.Reserved != 0 {
		t.Fatalf("after the cut-off reservation: %+v, want the warehouse's 3 taken, nothing reserved", inv)
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "cut-reserve")),
		http.StatusUnprocessableEntity, "/problems/idempotency-mismatch")
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-reserve")), http.StatusCreated, nil)
	if inv := a.inventory(product); inv.Available != 2 || inv.Reserved != 3 {
		t.Errorf("after the retry: %+v, want 2 free and 3 reserved", inv)
	}

	disarm = a.crashAfter(QueryWarehouseWrite)
	crashes(reserve(2, "late-retry"))
	disarm()
	decodeJSON(t, a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 5}`), http.StatusOK, nil)
	if inv := a.inventory(product); inv.Available != 0 || inv.Reserved != 5 {
		t.Errorf("after the stocktake: %+v, want the intent's 2 units held", inv)
	}
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "late-retry")), http.StatusOK, nil)
	if inv := a.inventory(product); inv.Available != 0 || inv.Reserved != 5 || inv.Oversold != 0 {
		t.Errorf("after the late retry: %+v, want nothing more taken, nothing oversold", inv)
	}
}

// TestStocktakeWaitsForTheGuard: a stocktake of a product whose reservation
// is between its warehouse read and write waits for the reservation's lock,
// so neither overwrites the other.
func TestStocktakeWaitsForTheGuard(t *testing.T) {
	t.Parallel()
	const product = 55
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var once sync.Once
	done := make(chan *httptest.ResponseRecorder, 1)
	a.svc.hooks.betweenReadAndWrite = func(context.Context, int64) {
		once.Do(func() {
			go func() { done <- a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 20}`) }()
			time.Sleep(200 * time.Millisecond) // time enough for a stocktake that does not wait to finish
		})
	}
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "during-stocktake")), http.StatusCreated, nil)
	decodeJSON(t, <-done, http.StatusOK, nil)
	if inv := a.inventory(product); inv.Stock != 20 || inv.Reserved != 3 || inv.Available != 17 {
		t.Errorf("after the reservation and the stocktake: %+v, want stock 20, 3 reserved, 17 free", inv)
	}
}
