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

// afterWarehouseWrite runs f once, right after the next warehouse write
// commits: where a caller is cut off between the warehouse and the catalog.
func (a *testAPI) afterWarehouseWrite(f func()) {
	var once sync.Once
	prev := a.svc.warehouse.observe
	a.svc.warehouse.observe = func(q string, d time.Duration) {
		if prev != nil {
			prev(q, d)
		}
		if q == QueryWarehouseWrite {
			once.Do(f)
		}
	}
}

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

// TestCancelCutOffAfterTheWarehouseGivesBackOnce: a cancel whose client
// leaves after the warehouse took the units back, before the catalog
// committed, leaves the hold active; the retried cancel ends it without
// giving the units back a second time, so nothing can be oversold.
func TestCancelCutOffAfterTheWarehouseGivesBackOnce(t *testing.T) {
	const product = 52
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-cancel")), http.StatusCreated, &r)

	ctx, leave := context.WithCancel(context.Background())
	a.afterWarehouseWrite(leave)
	if rec := a.doWithContext(ctx, http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""); rec.Code != 499 {
		t.Fatalf("the cut-off cancel answered %d %s, want 499", rec.Code, rec.Body.String())
	}
	var got Reservation
	decodeJSON(t, a.do(http.MethodGet, "/v1/reservations/"+itoa(r.ID), ""), http.StatusOK, &got)
	if got.Status != StatusActive {
		t.Fatalf("the cut-off cancel committed: %+v (the test proves nothing)", got)
	}
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, &got)
	if inv := a.inventory(product); got.Status != StatusCancelled || inv.Available != 5 || inv.Reserved != 0 {
		t.Errorf("after the retried cancel: %s, %+v; want cancelled, 5 free, none reserved", got.Status, inv)
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 6, "too-many")), http.StatusConflict, "/problems/insufficient-stock")
}

// TestInterruptedSweepGivesBackOnce: a sweep cut off (SIGTERM) between the
// warehouse and the catalog leaves the hold active; another instance's
// sweep ends it without giving the units back twice.
func TestInterruptedSweepGivesBackOnce(t *testing.T) {
	const product = 53
	a := newTestAPI(t, apiOptions{})
	b := a.sibling()
	a.setInventory(product, 5, 0)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-sweep")), http.StatusCreated, nil)
	a.expireAll(product)

	ctx, stop := context.WithCancel(context.Background())
	a.afterWarehouseWrite(stop)
	if n, err := a.svc.SweepExpired(ctx); n != 0 || err == nil {
		t.Fatalf("the cut-off sweep ended %d holds (%v): the test proves nothing", n, err)
	}
	if n, err := b.svc.SweepExpired(context.Background()); n != 1 || err != nil {
		t.Fatalf("the other instance's sweep ended %d holds (%v), want 1", n, err)
	}
	if inv := a.inventory(product); inv.Available != 5 || inv.Reserved != 0 {
		t.Errorf("after the sweeps: %+v, want 5 free once, none reserved", inv)
	}
}

// TestRetryAfterACutOffReservationTakesOnce: a reservation whose client
// leaves after the warehouse gave it the units, before the catalog
// committed, records nothing; its retry with the same key finds the take
// applied and takes no more units. A retry with another quantity under that
// key is refused, and a stocktake voids the take no reservation holds.
func TestRetryAfterACutOffReservationTakesOnce(t *testing.T) {
	const product = 54
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	ctx, leave := context.WithCancel(context.Background())
	a.afterWarehouseWrite(leave)
	if rec := a.doWithContext(ctx, http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-reserve")); rec.Code != 499 {
		t.Fatalf("the cut-off reservation answered %d %s, want 499", rec.Code, rec.Body.String())
	}
	if inv := a.inventory(product); inv.Available != 2 || inv.Reserved != 0 {
		t.Fatalf("after the cut-off reservation: %+v, want the warehouse's 3 taken, nothing reserved", inv)
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "cut-reserve")),
		http.StatusUnprocessableEntity, "/problems/idempotency-mismatch")
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cut-reserve")), http.StatusCreated, nil)
	if inv := a.inventory(product); inv.Available != 2 || inv.Reserved != 3 {
		t.Errorf("after the retry: %+v, want 2 free and 3 reserved", inv)
	}

	// A take nobody holds is voided by a stocktake.
	ctx, leave = context.WithCancel(context.Background())
	a.afterWarehouseWrite(leave)
	a.doWithContext(ctx, http.MethodPost, "/v1/reservations", reserveBody(product, 2, "never-retried"))
	decodeJSON(t, a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 5}`), http.StatusOK, nil)
	if inv := a.inventory(product); inv.Available != 2 || inv.Reserved != 3 {
		t.Errorf("after the stocktake: %+v, want the 2 units back", inv)
	}
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "never-retried")), http.StatusCreated, nil)
	if inv := a.inventory(product); inv.Available != 0 || inv.Reserved != 5 || inv.Oversold != 0 {
		t.Errorf("after the late retry: %+v, want the units taken again, nothing oversold", inv)
	}
}

// TestStocktakeWaitsForTheGuard: a stocktake of a product whose reservation
// is between its warehouse read and write waits for the reservation's lock,
// so neither overwrites the other.
func TestStocktakeWaitsForTheGuard(t *testing.T) {
	const product = 55
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var once sync.Once
	done := make(chan *httptest.ResponseRecorder, 1)
	a.svc.betweenReadAndWrite = func(int64) {
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
