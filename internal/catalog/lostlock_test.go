package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLostLockIsFenced plays the lost-lock scenario through the admin
// pause knob: request A takes the product's lock (TTL 300ms) and stops in
// its critical section for 800ms; its lock expires, request B takes it and
// reserves; when A wakes up, its write carries an older fencing token and
// is refused. Only B's units are reserved.
func TestLostLockIsFenced(t *testing.T) {
	const (
		product = 41
		qtyA    = 5
		qtyB    = 2
	)
	a := newTestAPI(t, apiOptions{lockTTL: 300 * time.Millisecond})
	a.setInventory(product, 100, 0)
	rdb := a.redis.Client()
	ctx := context.Background()
	lockKey := "{lockx:inventory:" + itoa(product) + "}"

	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"reservation_pause_ms": 800, "reservation_pause_percent": 100}`),
		http.StatusOK, nil)

	began := time.Now()
	doneA := make(chan *httptest.ResponseRecorder, 1)
	go func() { doneA <- a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qtyA, "lost-A")) }()

	// A holds the lock once its key exists; its token is the fence counter.
	waitFor(t, 5*time.Second, "A to hold the lock", func() bool {
		return rdb.Exists(ctx, lockKey).Val() == 1
	})
	tokenA, err := rdb.Get(ctx, lockKey+":fence").Int64()
	if err != nil {
		t.Fatal(err)
	}
	// A reads the pause knob right after it takes the lock; turn the knob
	// off once it has surely done so (a third of the TTL later), while A
	// still holds the lock, so that B does not pause.
	waitFor(t, 5*time.Second, "a third of A's lock TTL to pass", func() bool {
		ttl := rdb.PTTL(ctx, lockKey).Val()
		return ttl < 200*time.Millisecond // also true once the key is gone
	})
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, nil)
	if f := a.faults.Get(); f != (Faults{}) {
		t.Fatalf("faults = %+v after turning them off", f)
	}
	select {
	case rec := <-doneA:
		t.Fatalf("A answered %d %s before its pause ended: it did not pause", rec.Code, rec.Body.String())
	default:
	}

	// B waits for A's lock to expire (A never releases it in time), takes
	// it with a newer token and reserves.
	recB := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qtyB, "lost-B"))
	var resB Reservation
	decodeJSON(t, recB, http.StatusCreated, &resB)
	if resB.FenceToken <= tokenA {
		t.Errorf("B's token %d is not newer than A's %d", resB.FenceToken, tokenA)
	}

	// A wakes up after B has written: its write is fenced.
	var recA *httptest.ResponseRecorder
	select {
	case recA = <-doneA:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not answer")
	}
	if d := time.Since(began); d < 800*time.Millisecond {
		t.Errorf("A answered after %v, before its 800ms pause ended", d)
	}
	checkProblem(t, recA, http.StatusConflict, "/problems/fenced")

	_, reserved, fence := a.inventoryRow(product)
	if reserved != qtyB {
		t.Errorf("inventory.reserved = %d, want B's %d only", reserved, qtyB)
	}
	if fence != resB.FenceToken {
		t.Errorf("inventory.fence_token = %d, want B's %d", fence, resB.FenceToken)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE product_id = $1", product); n != 1 {
		t.Errorf("%d reservations of the product, want B's only", n)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = 'lost-A'"); n != 0 {
		t.Errorf("A's reservation exists")
	}
	if n := a.reservationsTotal("fenced"); n != 1 {
		t.Errorf(`catalog_reservations_total{result="fenced"} = %d, want 1`, n)
	}
	if n := a.reservationsTotal("reserved"); n != 1 {
		t.Errorf(`catalog_reservations_total{result="reserved"} = %d, want 1`, n)
	}
	if n := metricValue(t, a.reg, "lockx_lost_total", map[string]string{"name": "inventory"}); n < 1 {
		t.Errorf("lockx_lost_total = %v, want A's loss counted", n)
	}

	// A retry of A with the same key, without the pause, now succeeds.
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qtyA, "lost-A")), http.StatusCreated, nil)
	if _, reserved, _ := a.inventoryRow(product); reserved != qtyA+qtyB {
		t.Errorf("inventory.reserved = %d after A's retry, want %d", reserved, qtyA+qtyB)
	}
}

// TestLostLockWithoutStockIsInsufficient: a request that loses its lock in
// a pause, with nobody writing in between, is not fenced (its token is still
// the newest); when there is too little stock it is refused for that, and
// the answer and catalog_reservations_total agree on "insufficient".
func TestLostLockWithoutStockIsInsufficient(t *testing.T) {
	const product = 42
	a := newTestAPI(t, apiOptions{lockTTL: 200 * time.Millisecond})
	a.setInventory(product, 1, 0)
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"reservation_pause_ms": 500, "reservation_pause_percent": 100}`),
		http.StatusOK, nil)
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "lost-short"))
	checkProblem(t, rec, http.StatusConflict, "/problems/insufficient-stock")
	if n := metricValue(t, a.reg, "lockx_lost_total", map[string]string{"name": "inventory"}); n < 1 {
		t.Fatalf("lockx_lost_total = %v: the lock was not lost, the test proves nothing", n)
	}
	if f, i := a.reservationsTotal("fenced"), a.reservationsTotal("insufficient"); f != 0 || i != 1 {
		t.Errorf("catalog_reservations_total fenced=%d insufficient=%d, want 0 and 1 (as answered)", f, i)
	}
}
