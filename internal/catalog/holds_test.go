package catalog

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"
)

// expireAll moves every active hold of a product into the past.
func (a *testAPI) expireAll(productID int64) {
	a.t.Helper()
	a.queryInt(`WITH u AS (UPDATE reservations SET expires_at = now() - interval '1 second'
		WHERE product_id = $1 AND status = 'active' RETURNING 1) SELECT count(*) FROM u`, productID)
}

// TestReservationResource: a created reservation answers 201 with its
// Location, which answers the reservation (and HEAD); it expires the hold
// TTL after its creation; unknown and malformed ids answer 404 and 400.
func TestReservationResource(t *testing.T) {
	t.Parallel()
	const product = 48
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	began := time.Now()
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "resource"))
	var r Reservation
	decodeJSON(t, rec, http.StatusCreated, &r)
	loc := rec.Header().Get("Location")
	if loc != "/v1/reservations/"+itoa(r.ID) {
		t.Fatalf("Location = %q for reservation %d", loc, r.ID)
	}
	var got Reservation
	decodeJSON(t, a.do(http.MethodGet, loc, ""), http.StatusOK, &got)
	if got.ID != r.ID || got.Status != StatusActive || got.Quantity != 2 {
		t.Errorf("GET %s = %+v", loc, got)
	}
	if d := got.ExpiresAt.Sub(began); d < DefaultHoldTTL-time.Minute || d > DefaultHoldTTL+time.Minute {
		t.Errorf("expires_at is %v after the request, want about %v", d, DefaultHoldTTL)
	}
	// A replay answers 200 without a Location: nothing was created.
	rec = a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "resource"))
	decodeJSON(t, rec, http.StatusOK, nil)
	if l := rec.Header().Get("Location"); l != "" {
		t.Errorf("a replay carries Location %q", l)
	}
	if rec := a.do(http.MethodHead, loc, ""); rec.Code != http.StatusOK {
		t.Errorf("HEAD %s: %d", loc, rec.Code)
	}
	checkProblem(t, a.do(http.MethodGet, "/v1/reservations/999999999", ""), http.StatusNotFound, "/problems/not-found")
	checkProblem(t, a.do(http.MethodGet, "/v1/reservations/x%00", ""), http.StatusBadRequest, "/problems/bad-request")
}

// TestTwoSweepersReturnStockOnce: two API instances on one database sweep
// the same expired holds at once; every hold ends expired, its units come
// back to the warehouse once, and the two instances' expiry counts add up to
// the holds. A cancel of an expired hold changes nothing.
func TestTwoSweepersReturnStockOnce(t *testing.T) {
	t.Parallel()
	const (
		product = 49
		holds   = 12
	)
	a := newTestAPI(t, apiOptions{})
	b := a.sibling()
	a.setInventory(product, 50, 0)
	var ids []int64
	for i := range holds {
		var r Reservation
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1+i%3, "sweep-"+itoa(int64(i)))), http.StatusCreated, &r)
		ids = append(ids, r.ID)
	}
	if n, err := a.svc.SweepExpired(context.Background()); err != nil || n != 0 {
		t.Fatalf("a sweep before expiry ended %d holds (%v)", n, err)
	}
	a.expireAll(product)

	var wg sync.WaitGroup
	ended := make([]int, 2)
	for i, api := range []*testAPI{a, b} {
		wg.Go(func() {
			n, err := api.svc.SweepExpired(context.Background())
			if err != nil {
				t.Errorf("sweeper %d: %v", i, err)
			}
			ended[i] = n
		})
	}
	wg.Wait()
	if ended[0]+ended[1] != holds {
		t.Errorf("the sweepers ended %d and %d holds, want %d in all", ended[0], ended[1], holds)
	}
	counted := metricValue(t, a.reg, "catalog_reservations_expired_total", nil) + metricValue(t, b.reg, "catalog_reservations_expired_total", nil)
	if counted != holds {
		t.Errorf("catalog_reservations_expired_total adds up to %v, want %d", counted, holds)
	}
	var inv Inventory
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product)+"/inventory", ""), http.StatusOK, &inv)
	if inv.Reserved != 0 || inv.Available != 50 || inv.Oversold != 0 {
		t.Errorf("inventory after the sweep: %+v, want nothing reserved and all 50 free once", inv)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE product_id = $1 AND status = 'expired'", product); n != holds {
		t.Errorf("%d holds expired, want %d", n, holds)
	}
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(ids[0])+"/cancel", ""), http.StatusOK, &r)
	if r.Status != StatusExpired {
		t.Errorf("cancel of an expired hold answered %+v", r)
	}
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product)+"/inventory", ""), http.StatusOK, &inv)
	if inv.Available != 50 {
		t.Errorf("a cancel of an expired hold gave units back again: %d free", inv.Available)
	}
}

// TestRunSweeperSweepsAtEveryTick drives the sweeper's loop with a tick
// channel (no wall clock): each tick ends the holds expired by then.
func TestRunSweeperSweepsAtEveryTick(t *testing.T) {
	t.Parallel()
	const product = 50
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.svc.RunSweeper(ctx, tick, slog.New(slog.DiscardHandler)) }()
	defer func() { cancel(); <-done }()

	for round := range 2 {
		decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "tick-"+itoa(int64(round)))), http.StatusCreated, nil)
		a.expireAll(product)
		tick <- time.Now()
		tick <- time.Now() // the loop took the first tick: the sweep it started is over once it takes this one
		if n := metricValue(t, a.reg, "catalog_reservations_expired_total", nil); n != float64(round+1) {
			t.Errorf("after tick %d: %v holds expired, want %d", round, n, round+1)
		}
	}
}

// TestCancelIsOneQuery: a cancel is observed once as the cancel query (the
// catalog's end of the hold) and once as the settle query (the record that
// the warehouse took the units back); it looks nothing up first.
func TestCancelIsOneQuery(t *testing.T) {
	t.Parallel()
	const product = 51
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, "cancel-once")), http.StatusCreated, &r)
	count := func(q string) float64 {
		return metricValue(t, a.reg, "catalog_db_query_duration_seconds", map[string]string{"query": q})
	}
	cancels, settles, lookups := count(QueryCancel), count(QueryMarkGiven), count(QueryReservation)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, nil)
	if d := count(QueryCancel) - cancels; d != 1 {
		t.Errorf("one cancel observed %v times as %q", d, QueryCancel)
	}
	if d := count(QueryMarkGiven) - settles; d != 1 {
		t.Errorf("one cancel observed %v times as %q", d, QueryMarkGiven)
	}
	if d := count(QueryReservation) - lookups; d != 0 {
		t.Errorf("one cancel observed %v look-ups", d)
	}
}
