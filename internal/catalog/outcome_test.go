package catalog

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReserveAnswersWhatTheCommitDid: when a reservation's commit ran but
// its reply was lost, the key is looked up and the answer is the
// reservation (201), counted as reserved; when the look-up fails too, the
// answer is 503 "retry with the same key", counted as unknown, and that
// retry finds the reservation.
func TestReserveAnswersWhatTheCommitDid(t *testing.T) {
	const product = 45
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	errLost := errors.New("connection reset after COMMIT")
	a.svc.store.lostCommit = func() error { return errLost }

	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "lost-reply")), http.StatusCreated, &r)
	if r.IdempotencyKey != "lost-reply" || r.Quantity != 2 {
		t.Errorf("answered %+v", r)
	}
	if n := a.reservationsTotal("reserved"); n != 1 {
		t.Errorf(`catalog_reservations_total{result="reserved"} = %d, want 1`, n)
	}

	// The look-up fails as well: every query after the commit is refused.
	a.svc.store.lostCommit = func() error {
		a.svc.store.SetDelay(func(context.Context) error { return errors.New("database unreachable") })
		return errLost
	}
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "unknown-outcome"))
	p := checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")
	if !strings.Contains(p.Detail, "retry with the same idempotency key") {
		t.Errorf("detail %q does not say to retry with the same key", p.Detail)
	}
	if n := a.reservationsTotal("unknown"); n != 1 {
		t.Errorf(`catalog_reservations_total{result="unknown"} = %d, want 1`, n)
	}
	a.svc.store.lostCommit = nil
	a.svc.store.SetDelay(nil)
	var again Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "unknown-outcome")), http.StatusOK, &again)
	if again.Quantity != 3 || again.Status != StatusActive {
		t.Errorf("the retry found %+v", again)
	}
	if _, reserved, _ := a.inventoryRow(product); reserved != 5 {
		t.Errorf("reserved = %d, want 2 + 3", reserved)
	}
}

// TestReserveLockLostBeforeCommitIs409: a holder that sees its lock lost
// before it writes (not paused: it notices) writes nothing; nothing was
// committed under its key, so the answer is 409 fenced.
func TestReserveLockLostBeforeCommitIs409(t *testing.T) {
	const product = 46
	a := newTestAPI(t, apiOptions{lockTTL: 200 * time.Millisecond})
	a.setInventory(product, 10, 0)
	a.svc.betweenReadAndWrite = func(int64) {
		waitFor(t, 5*time.Second, "the lock to be lost", func() bool {
			return metricValue(t, a.reg, "lockx_lost_total", map[string]string{"name": "inventory"}) >= 1
		})
	}
	checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "lost-early")), http.StatusConflict, "/problems/fenced")
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = 'lost-early'"); n != 0 {
		t.Errorf("%d reservations under the key", n)
	}
	if _, reserved, _ := a.inventoryRow(product); reserved != 0 {
		t.Errorf("reserved = %d", reserved)
	}
	if n := a.reservationsTotal("fenced"); n != 1 {
		t.Errorf(`catalog_reservations_total{result="fenced"} = %d, want 1`, n)
	}
}
