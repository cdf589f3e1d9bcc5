package catalog

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// oversold computes a product's oversold units from the data: the units its
// active reservations hold beyond its stock.
func (a *testAPI) oversold(productID int64) int {
	a.t.Helper()
	return int(a.queryInt(`SELECT greatest(0, coalesce(sum(r.quantity), 0) - max(i.stock))
		FROM inventory i LEFT JOIN reservations r ON r.product_id = i.product_id AND r.status = 'active'
		WHERE i.product_id = $1`, productID))
}

// setMode switches the instance's reservation mode through the admin API.
func (a *testAPI) setMode(m Mode) {
	a.t.Helper()
	var got ModeSetting
	decodeJSON(a.t, a.admin(http.MethodPut, "/admin/reservation-mode", `{"mode":"`+string(m)+`"}`), http.StatusOK, &got)
	if got.Mode != m {
		a.t.Fatalf("mode = %q after setting %q", got.Mode, m)
	}
}

// TestUnsafeModeOversells forces the interleaving a lock exists to prevent:
// two reservations of 3 units of a product with 5 both read the warehouse
// before either writes. Without a lock both succeed, and one unit is
// oversold.
func TestUnsafeModeOversells(t *testing.T) {
	t.Parallel()
	const product = 43
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 5, 0)
	a.setMode(ModeUnsafe)

	var read sync.WaitGroup
	read.Add(2)
	bothRead := make(chan struct{})
	go func() { read.Wait(); close(bothRead) }()
	a.svc.hooks.betweenReadAndWrite = func(context.Context, int64) {
		read.Done()
		select {
		case <-bothRead:
		case <-time.After(time.Minute):
			t.Error("the other reservation never read the warehouse")
		}
	}
	recs := make(chan *httptest.ResponseRecorder, 2)
	for _, key := range []string{"unsafe-A", "unsafe-B"} {
		go func() { recs <- a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, key)) }()
	}
	for range 2 {
		decodeJSON(t, <-recs, http.StatusCreated, nil)
	}
	if n := a.oversold(product); n != 1 {
		t.Errorf("%d units oversold, want 1", n)
	}
	var inv Inventory
	decodeJSON(t, a.do(http.MethodGet, "/v1/products/"+itoa(product)+"/inventory", ""), http.StatusOK, &inv)
	if inv.Reserved != 6 || inv.Oversold != 1 || inv.Available != 2 {
		t.Errorf("inventory = %+v, want 6 reserved, 1 oversold, and the warehouse's 2 free (one write lost)", inv)
	}
}

// TestLockedModesDoNotOversellUnderConcurrency: 20 buyers of one unit of a
// product with 10, at once. With the lock (modes lock and fenced) exactly
// 10 get one, and nothing is oversold.
func TestLockedModesDoNotOversellUnderConcurrency(t *testing.T) {
	t.Parallel()
	const product = 44
	a := newTestAPI(t, apiOptions{lockWait: 10 * time.Second})
	for _, m := range []Mode{ModeLock, ModeFenced} {
		t.Run(string(m), func(t *testing.T) {
			a.setMode(m)
			a.setInventory(product, 10, 0)
			a.queryInt("WITH d AS (DELETE FROM reservations WHERE product_id = $1 RETURNING 1) SELECT count(*) FROM d", product)
			codes := make(chan int, 20)
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() {
					codes <- a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, fmt.Sprintf("%s-%d", m, i))).Code
				})
			}
			wg.Wait()
			close(codes)
			created := 0
			for c := range codes {
				switch c {
				case http.StatusCreated:
					created++
				case http.StatusConflict:
				default:
					t.Errorf("answer %d", c)
				}
			}
			if created != 10 || a.oversold(product) != 0 {
				t.Errorf("%d created, %d oversold; want 10 and 0", created, a.oversold(product))
			}
		})
	}
}

// TestLostLock plays the lost-lock scenario through the admin pause knob in
// the two locked modes: request A takes the product's lock (TTL 2s), reads
// the warehouse (5 free) and stops before writing; its lock expires,
// request B takes it, reads 5, takes 3. When A wakes up it writes 5 - 3 as
// well. In mode lock the warehouse takes that write and a unit is oversold;
// in mode fenced A's older token is refused and A answers 409. A stops
// until B has answered (a test hook), then for the knob's 1.5s: the order
// does not depend on how fast the machine serves B.
func TestLostLock(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{ModeLock, ModeFenced} {
		t.Run(string(m), func(t *testing.T) { testLostLock(t, m) })
	}
}

func testLostLock(t *testing.T, mode Mode) {
	const (
		product = 41
		qty     = 3
	)
	a := newTestAPI(t, apiOptions{lockWait: time.Minute}) // B waits for A's lock to expire
	a.setInventory(product, 5, 0)
	a.setMode(mode)
	rdb := a.redis.Client()
	lockKey := "{lockx:inventory:" + itoa(product) + "}"

	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"reservation_pause_ms": 1500, "reservation_pause_percent": 100}`),
		http.StatusOK, nil)
	aRead, bDone := make(chan struct{}), make(chan struct{})
	bAnswered := sync.OnceFunc(func() { close(bDone) })
	defer bAnswered() // also when the test fails before B answers
	var first atomic.Bool
	a.svc.hooks.betweenReadAndWrite = func(context.Context, int64) {
		if first.CompareAndSwap(false, true) { // A, not B
			close(aRead)
			<-bDone
		}
	}

	began := time.Now()
	doneA := make(chan *httptest.ResponseRecorder, 1)
	go func() { doneA <- a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qty, "lost-A")) }()
	select {
	case <-aRead:
	case <-time.After(time.Minute):
		t.Fatal("A never read the warehouse")
	}
	tokenA, err := rdb.Get(context.Background(), lockKey+":fence").Int64()
	if err != nil {
		t.Fatal(err)
	}
	// A has read the knob; B must not pause.
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, nil)

	// B waits for A's lock to expire, takes it with a newer token, reserves.
	// On a busy machine B's own lock can run out too: its answer is then a
	// 503 "retry with the same key", and B does what a client should.
	var resB Reservation
	decodeJSON(t, retryWhileUnknown(t, func() *httptest.ResponseRecorder {
		return a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qty, "lost-B"))
	}), http.StatusCreated, &resB)
	bAnswered()
	if resB.FenceToken <= tokenA {
		t.Errorf("B's token %d is not newer than A's %d", resB.FenceToken, tokenA)
	}
	select {
	case rec := <-doneA:
		t.Fatalf("A answered %d %s before B: the interleaving did not happen", rec.Code, rec.Body.String())
	default:
	}

	recA := <-doneA
	if d := time.Since(began); d < 1500*time.Millisecond {
		t.Errorf("A answered after %v, before its pause ended", d)
	}
	if n := metricValue(t, a.reg, "lockx_lost_total", map[string]string{"name": "inventory"}); n < 1 {
		t.Errorf("lockx_lost_total = %v, want A's loss counted", n)
	}
	_, reserved, fence := a.inventoryRow(product)
	switch mode {
	case ModeLock:
		decodeJSON(t, recA, http.StatusCreated, nil)
		if n := a.oversold(product); n != 1 || reserved != 2*qty {
			t.Errorf("%d units oversold, %d reserved; want 1 and %d: A's stale write went through", n, reserved, 2*qty)
		}
	case ModeFenced:
		checkProblem(t, recA, http.StatusConflict, "/problems/fenced")
		if n := a.oversold(product); n != 0 || reserved != qty || fence != resB.FenceToken {
			t.Errorf("%d oversold, %d reserved, warehouse token %d; want 0, B's %d and B's token %d", n, reserved, fence, qty, resB.FenceToken)
		}
		if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = 'lost-A'"); n != 0 {
			t.Errorf("A's reservation exists")
		}
		if f, r := a.reservationsTotal("fenced"), a.reservationsTotal("reserved"); f != 1 || r != 1 {
			t.Errorf(`catalog_reservations_total fenced = %d, reserved = %d; want 1 and 1`, f, r)
		}
		// A retry of A with the same key finds 2 units: too few.
		checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qty, "lost-A")),
			http.StatusConflict, "/problems/insufficient-stock")
	}
}

// retryWhileUnknown repeats a request while it answers 503 (the outcome is
// unknown or a dependency is busy: retry with the same idempotency key), for
// up to a minute, and returns the first other answer.
func retryWhileUnknown(t *testing.T, do func() *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		rec := do()
		if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return rec
		}
		time.Sleep(50 * time.Millisecond)
	}
}
