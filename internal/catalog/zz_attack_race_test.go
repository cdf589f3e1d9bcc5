package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func (a *testAPI) zzInv(product int64) Inventory {
	a.t.Helper()
	var inv Inventory
	decodeJSON(a.t, a.do(http.MethodGet, "/v1/products/"+itoa(product)+"/inventory", ""), http.StatusOK, &inv)
	return inv
}

// hookWarehouseWrite runs f after every successful warehouse write (in the
// goroutine that wrote, before it returns to the catalog transaction).
func (a *testAPI) zzHookWrite(f func()) {
	orig := a.svc.warehouse.observe
	a.svc.warehouse.observe = func(q string, d time.Duration) {
		if orig != nil {
			orig(q, d)
		}
		if q == QueryWarehouseWrite {
			f()
		}
	}
}

// Attack 1a: fenced mode; a cancel's holder pauses (GC) after the
// warehouse Give committed and before the catalog commit, past the lock TTL.
// The catalog rolls back: the hold stays active, the units are back in the
// warehouse. The next cancel gives them again.
func TestZZCancelLockLostAfterGive(t *testing.T) {
	const product = 60
	a := newTestAPI(t, apiOptions{lockTTL: 300 * time.Millisecond})
	a.setInventory(product, 5, 0)
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "dbl-1")), http.StatusCreated, &r)
	t.Logf("after reserve: %+v", a.zzInv(product))

	var once atomic.Bool
	a.zzHookWrite(func() {
		if once.CompareAndSwap(false, true) {
			time.Sleep(1 * time.Second) // a GC pause after the warehouse write
		}
	})
	rec := a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", "")
	t.Logf("first cancel: %d %s", rec.Code, rec.Body.String())
	var got Reservation
	decodeJSON(t, a.do(http.MethodGet, "/v1/reservations/"+itoa(r.ID), ""), http.StatusOK, &got)
	t.Logf("reservation after first cancel: status %s", got.Status)
	t.Logf("inventory after first cancel: %+v", a.zzInv(product))

	rec = a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", "")
	t.Logf("second cancel: %d %s", rec.Code, rec.Body.String())
	inv := a.zzInv(product)
	t.Logf("inventory after second cancel: %+v", inv)
	// Now sell everything the warehouse says is free.
	rec = a.do(http.MethodPost, "/v1/reservations", reserveBody(product, inv.Available, "dbl-all"))
	t.Logf("reserve %d: %d", inv.Available, rec.Code)
	inv = a.zzInv(product)
	t.Logf("final inventory: %+v, oversold from data = %d", inv, a.oversold(product))
	if inv.Oversold > 0 {
		t.Errorf("FENCED MODE OVERSOLD %d units", inv.Oversold)
	}
}

// Attack 1b: the client leaves right after the warehouse Give of its cancel.
func TestZZCancelClientLeavesAfterGive(t *testing.T) {
	const product = 61
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "dbl-2")), http.StatusCreated, &r)

	ctx, cancel := context.WithCancel(context.Background())
	var once atomic.Bool
	a.zzHookWrite(func() {
		if once.CompareAndSwap(false, true) {
			cancel() // the client hangs up
		}
	})
	req := httptest.NewRequest(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", nil).WithContext(ctx)
	rec := a.spec.serve(t, a.handler, req)
	t.Logf("cancel whose client left: %d %s", rec.Code, rec.Body.String())
	var got Reservation
	decodeJSON(t, a.do(http.MethodGet, "/v1/reservations/"+itoa(r.ID), ""), http.StatusOK, &got)
	t.Logf("reservation: status %s; inventory %+v", got.Status, a.zzInv(product))
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, nil)
	inv := a.zzInv(product)
	t.Logf("after the retry of the cancel: %+v", inv)
	if inv.Available > inv.Stock-inv.Reserved {
		t.Errorf("warehouse has %d free, stock %d reserved %d: %d units created", inv.Available, inv.Stock, inv.Reserved, inv.Available-(inv.Stock-inv.Reserved))
	}
}

// Attack 1c: SIGTERM (the sweeper's ctx ends) right after a sweep's Give;
// the next sweeper (another replica, or after restart) gives again.
func TestZZSweepInterruptedAfterGive(t *testing.T) {
	const product = 62
	a := newTestAPI(t, apiOptions{})
	b := a.sibling()
	a.setInventory(product, 5, 0)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "dbl-3")), http.StatusCreated, nil)
	a.expireAll(product)
	ctx, cancel := context.WithCancel(context.Background())
	var once atomic.Bool
	a.zzHookWrite(func() {
		if once.CompareAndSwap(false, true) {
			cancel() // SIGTERM during the sweep
		}
	})
	n, err := a.svc.SweepExpired(ctx)
	t.Logf("interrupted sweep: ended %d, err %v; inventory %+v", n, err, a.zzInv(product))
	n, err = b.svc.SweepExpired(context.Background())
	t.Logf("other replica's sweep: ended %d, err %v", n, err)
	inv := a.zzInv(product)
	t.Logf("inventory: %+v", inv)
	if inv.Available > inv.Stock-inv.Reserved {
		t.Errorf("warehouse has %d free, stock %d reserved %d: %d units created", inv.Available, inv.Stock, inv.Reserved, inv.Available-(inv.Stock-inv.Reserved))
	}
}

// Attack 1d: reservation whose lock is lost after the warehouse write:
// answered 409 "nothing was reserved" but the units are gone.
func TestZZReserveLockLostAfterTake(t *testing.T) {
	const product = 63
	a := newTestAPI(t, apiOptions{lockTTL: 300 * time.Millisecond})
	a.setInventory(product, 5, 0)
	var once atomic.Bool
	a.zzHookWrite(func() {
		if once.CompareAndSwap(false, true) {
			time.Sleep(time.Second)
		}
	})
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "lose-1"))
	t.Logf("reserve: %d %s", rec.Code, rec.Body.String())
	inv := a.zzInv(product)
	t.Logf("inventory: %+v", inv)
	if inv.Available != inv.Stock-inv.Reserved {
		t.Logf("units lost: %d", inv.Stock-inv.Reserved-inv.Available)
	}
	rec = a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "lose-1"))
	t.Logf("retry with same key: %d %s", rec.Code, rec.Body.String())
}

// Attack 2a: stocktake between a reservation's warehouse read and write
// (fenced mode): the reservation's write overwrites the stocktake.
func TestZZStocktakeBetweenReadAndWrite(t *testing.T) {
	const product = 64
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var once atomic.Bool
	a.svc.betweenReadAndWrite = func(int64) {
		if once.CompareAndSwap(false, true) {
			rec := a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 20}`)
			t.Logf("stocktake during the reservation: %d %s", rec.Code, rec.Body.String())
		}
	}
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "st-1")), http.StatusCreated, nil)
	inv := a.zzInv(product)
	t.Logf("inventory: %+v", inv)
	if inv.Available != inv.Stock-inv.Reserved {
		t.Errorf("warehouse %d free, stock - reserved = %d", inv.Available, inv.Stock-inv.Reserved)
	}
}

// Attack 2b: stocktake between a reservation's warehouse write and its
// catalog commit (fenced mode): oversell.
func TestZZStocktakeAfterWriteBeforeCommit(t *testing.T) {
	const product = 65
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	var once atomic.Bool
	var wg sync.WaitGroup
	a.zzHookWrite(func() {
		if once.CompareAndSwap(false, true) {
			rec := a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 5}`)
			t.Logf("stocktake (same stock, 5) during the reservation: %d %s", rec.Code, rec.Body.String())
		}
	})
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "st-2")), http.StatusCreated, nil)
	wg.Wait()
	inv := a.zzInv(product)
	t.Logf("inventory after: %+v", inv)
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, inv.Available, "st-3"))
	t.Logf("reserve the %d the warehouse offers: %d", inv.Available, rec.Code)
	inv = a.zzInv(product)
	t.Logf("final: %+v oversold(data) %d", inv, a.oversold(product))
	if inv.Oversold > 0 {
		t.Errorf("FENCED MODE OVERSOLD %d units", inv.Oversold)
	}
}

// Attack 3: two instances, cancels on b racing sweeps on a, fenced; no units
// created or lost.
func TestZZSweepRacesCancel(t *testing.T) {
	const product = 66
	a := newTestAPI(t, apiOptions{lockWait: 20 * time.Second})
	b := a.sibling()
	a.setInventory(product, 200, 0)
	var ids []int64
	for i := range 60 {
		var r Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1+i%3, "race-"+itoa(int64(i)))), http.StatusCreated, &r)
		ids = append(ids, r.ID)
	}
	a.expireAll(product)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 3 {
			if _, err := a.svc.SweepExpired(context.Background()); err != nil {
				t.Errorf("sweep: %v", err)
			}
		}
	})
	for _, id := range ids {
		wg.Go(func() {
			rec := b.do(http.MethodPost, "/v1/reservations/"+itoa(id)+"/cancel", "")
			if rec.Code != 200 {
				t.Errorf("cancel %d: %d %s", id, rec.Code, rec.Body.String())
			}
		})
	}
	wg.Wait()
	inv := a.zzInv(product)
	t.Logf("after: %+v; expired %d cancelled %d", inv,
		a.queryInt("SELECT count(*) FROM reservations WHERE product_id=$1 AND status='expired'", product),
		a.queryInt("SELECT count(*) FROM reservations WHERE product_id=$1 AND status='cancelled'", product))
	if inv.Available != 200 || inv.Reserved != 0 {
		t.Errorf("inventory %+v, want 200 free", inv)
	}
}
