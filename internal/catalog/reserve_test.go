package catalog

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestReserveNoOversell sends 200 concurrent reservations of one unit
// against 50 units of stock: exactly 50 succeed, the others are refused
// with insufficient-stock, and the table and the metrics agree.
func TestAPIReserveNoOversell(t *testing.T) {
	t.Parallel()
	const (
		product  = 31
		stock    = 50
		requests = 200
	)
	a := newTestAPI(t, apiOptions{lockWait: 30 * time.Second})
	a.setInventory(product, stock, 0)

	recs := make([]*httptest.ResponseRecorder, requests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			<-start
			recs[i] = a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, fmt.Sprintf("oversell-%d", i)))
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d reservations in %v, %v lock attempts", requests, time.Since(began),
		metricValue(t, a.reg, "lockx_acquire_attempts_total", nil))

	created, refused := 0, 0
	for i, rec := range recs {
		switch rec.Code {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			refused++
			checkProblem(t, rec, http.StatusConflict, "/problems/insufficient-stock")
		default:
			t.Errorf("request %d: %d %s", i, rec.Code, rec.Body.String())
		}
	}
	if created != stock || refused != requests-stock {
		t.Errorf("%d created, %d refused; want %d, %d", created, refused, stock, requests-stock)
	}
	if _, reserved, _ := a.inventoryRow(product); reserved != stock {
		t.Errorf("inventory.reserved = %d, want %d", reserved, stock)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE product_id = $1 AND status = 'active'", product); n != stock {
		t.Errorf("%d active reservations, want %d", n, stock)
	}
	if n := a.reservationsTotal("reserved"); n != stock {
		t.Errorf(`catalog_reservations_total{result="reserved"} = %d, want %d`, n, stock)
	}
	if n := a.reservationsTotal("insufficient"); n != requests-stock {
		t.Errorf(`catalog_reservations_total{result="insufficient"} = %d, want %d`, n, requests-stock)
	}
	for _, r := range []string{"fenced", "lock_timeout", "duplicate"} {
		if n := a.reservationsTotal(r); n != 0 {
			t.Errorf(`catalog_reservations_total{result=%q} = %d, want 0`, r, n)
		}
	}
}

// TestReserveIdempotent sends 20 concurrent requests with one idempotency
// key: one reservation is made, every answer carries it, and the stock is
// taken once. The key then refuses another quantity or product.
func TestAPIReserveIdempotent(t *testing.T) {
	t.Parallel()
	const (
		product  = 32
		qty      = 3
		requests = 20
		key      = "idem-shared"
	)
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 100, 0)

	recs := make([]*httptest.ResponseRecorder, requests)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				recs[i] = a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qty, key))
			} else { // the header form of the same key
				recs[i] = a.do(http.MethodPost, "/v1/reservations", fmt.Sprintf(`{"product_id": %d, "quantity": %d}`, product, qty),
					"Idempotency-Key", key)
			}
		})
	}
	close(start)
	wg.Wait()

	created := 0
	var id int64
	for i, rec := range recs {
		var r Reservation
		switch rec.Code {
		case http.StatusCreated:
			created++
			decodeJSON(t, rec, http.StatusCreated, &r)
		case http.StatusOK:
			decodeJSON(t, rec, http.StatusOK, &r)
		default:
			t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body.String())
		}
		if id == 0 {
			id = r.ID
		}
		if r.ID != id || r.ProductID != product || r.Quantity != qty || r.IdempotencyKey != key || r.Status != StatusActive {
			t.Errorf("request %d answered %+v, want reservation %d", i, r, id)
		}
	}
	if created != 1 {
		t.Errorf("%d answers were 201, want exactly 1", created)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = $1", key); n != 1 {
		t.Errorf("%d reservations with the key, want 1", n)
	}
	if _, reserved, _ := a.inventoryRow(product); reserved != qty {
		t.Errorf("inventory.reserved = %d, want %d (raised once)", reserved, qty)
	}
	if n := a.reservationsTotal("reserved"); n != 1 {
		t.Errorf(`reserved = %d, want 1`, n)
	}
	if n := a.reservationsTotal("duplicate"); n != requests-1 {
		t.Errorf(`duplicate = %d, want %d`, n, requests-1)
	}

	// The same key for another quantity, or another product, is refused and
	// changes nothing.
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qty+1, key)),
		http.StatusUnprocessableEntity, "/problems/idempotency-mismatch")
	a.setInventory(product+1, 100, 0)
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product+1, qty, key)),
		http.StatusUnprocessableEntity, "/problems/idempotency-mismatch")
	if _, reserved, _ := a.inventoryRow(product); reserved != qty {
		t.Errorf("inventory.reserved = %d after mismatches, want %d", reserved, qty)
	}
	if _, reserved, _ := a.inventoryRow(product + 1); reserved != 0 {
		t.Errorf("inventory.reserved of product %d = %d after a mismatch, want 0", product+1, reserved)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations"); n != 1 {
		t.Errorf("%d reservations, want 1", n)
	}
}

// TestReserveCancel checks cancelling returns the stock, is idempotent, and
// answers 404 for an unknown reservation.
func TestAPIReserveCancel(t *testing.T) {
	t.Parallel()
	const product = 33
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)

	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 7, "cancel-1")), http.StatusCreated, &r)
	if _, reserved, _ := a.inventoryRow(product); reserved != 7 {
		t.Fatalf("reserved = %d after reserving 7", reserved)
	}
	// Only 3 left: 4 more are refused.
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 4, "cancel-2")),
		http.StatusConflict, "/problems/insufficient-stock")

	for i := range 2 { // cancelling twice is fine
		var c Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, &c)
		if c.ID != r.ID || c.Status != StatusCancelled || c.Quantity != 7 {
			t.Errorf("cancel #%d = %+v", i+1, c)
		}
		if _, reserved, _ := a.inventoryRow(product); reserved != 0 {
			t.Errorf("reserved = %d after cancel #%d, want 0", reserved, i+1)
		}
	}
	var inv Inventory
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product)+"/inventory", ""), http.StatusOK, &inv)
	if inv.Available != 10 || inv.Reserved != 0 {
		t.Errorf("inventory after cancel = %+v, want 10 available", inv)
	}
	// The stock given back can be reserved again.
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 10, "cancel-3")), http.StatusCreated, nil)
	// A replay of the cancelled reservation's key returns it, cancelled.
	var replay Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 7, "cancel-1")), http.StatusOK, &replay)
	if replay.ID != r.ID || replay.Status != StatusCancelled {
		t.Errorf("replay of a cancelled reservation = %+v", replay)
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations/987654/cancel", ""), http.StatusNotFound, "/problems/not-found")
}
