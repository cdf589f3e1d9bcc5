package catalog

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReserveAnswersWhatTheCommitDid: when a reservation's commit ran but
// its reply was lost, the key is looked up and the answer is the
// reservation (201), counted as reserved; when the look-up fails too, the
// answer is 503 "retry with the same key", counted as unknown, and that
// retry finds the reservation.
func TestReserveAnswersWhatTheCommitDid(t *testing.T) {
	t.Parallel()
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
	if !strings.Contains(p.Detail, "same idempotency key") {
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
	t.Parallel()
	const product = 46
	a := newTestAPI(t, apiOptions{}) // the lock is lost when its 2s TTL runs out
	a.setInventory(product, 10, 0)
	a.svc.hooks.betweenReadAndWrite = func(ctx context.Context, _ int64) {
		select { // the lock's context: it ends when the loss is noticed
		case <-ctx.Done():
		case <-time.After(time.Minute):
			t.Error("the lock was never lost")
		}
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

// loseTheLock makes the next commit wait until the reservation's lock is
// lost, make every query after it fail, and report its reply lost: a
// commit that ran while the lock expired, then a database that stopped
// answering.
func (a *testAPI) loseTheLock(t *testing.T) {
	a.svc.store.lostCommit = func() error {
		waitFor(t, time.Minute, "the lock to be lost", func() bool {
			return metricValue(t, a.reg, "lockx_lost_total", map[string]string{"name": "inventory"}) >= 1
		})
		a.svc.store.SetDelay(func(context.Context) error { return errors.New("database unreachable") })
		return errors.New("connection reset after COMMIT")
	}
}

// TestAnUnknownOutcomeIsNeverARefusal: a reservation whose last commit ran
// while its lock expired, and whose look-up then failed, does hold units:
// it is answered 503 "retry with the same idempotency key", counted
// unknown, never 409 fenced ("nothing was recorded"), and the retry finds
// it. Before the saga it answered 409 fenced.
func TestAnUnknownOutcomeIsNeverARefusal(t *testing.T) {
	t.Parallel()
	const product = 47
	a := newTestAPI(t, apiOptions{}) // the lock is lost when its 2s TTL runs out
	a.setInventory(product, 10, 0)
	a.loseTheLock(t)
	p := checkProblem(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "lost-while-committing")),
		http.StatusServiceUnavailable, "/problems/unavailable")
	if !strings.Contains(p.Detail, "same idempotency key") {
		t.Errorf("detail %q does not say to retry with the same key", p.Detail)
	}
	if n, f := a.reservationsTotal("unknown"), a.reservationsTotal("fenced"); n != 1 || f != 0 {
		t.Errorf(`catalog_reservations_total: unknown %d, fenced %d; want 1 and 0`, n, f)
	}
	a.svc.store.lostCommit = nil
	a.svc.store.SetDelay(nil)
	var r Reservation
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "lost-while-committing"))
	if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
		t.Fatalf("the retry answered %d %s", rec.Code, rec.Body.String())
	}
	decodeJSON(t, rec, rec.Code, &r)
	if inv := a.inventory(product); r.Status != StatusActive || inv.Reserved != 2 || inv.Available != 8 {
		t.Errorf("the retry found %+v; inventory %+v", r, inv)
	}
}

// TestCancelAnswersWhatTheCommitDid: a cancel whose commit ran but whose
// reply was lost is looked up and answered 200 cancelled; when the look-up
// fails too, 503 "retry the same request", never 500 or 409. Before the
// saga a cancel looked nothing up: it answered 500, or 409 fenced when the
// lock expired meanwhile, while the reservation was cancelled.
func TestCancelAnswersWhatTheCommitDid(t *testing.T) {
	t.Parallel()
	const product = 49
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	var r1, r2 Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "cancel-lost-reply")), http.StatusCreated, &r1)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 3, "cancel-unknown")), http.StatusCreated, &r2)
	errLost := errors.New("connection reset after COMMIT")
	a.svc.store.lostCommit = func() error { return errLost }
	var got Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r1.ID)+"/cancel", ""), http.StatusOK, &got)
	if got.Status != StatusCancelled {
		t.Errorf("answered %+v", got)
	}

	a.svc.store.lostCommit = func() error {
		a.svc.store.SetDelay(func(context.Context) error { return errors.New("database unreachable") })
		return errLost
	}
	p := checkProblem(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r2.ID)+"/cancel", ""), http.StatusServiceUnavailable, "/problems/unavailable")
	if !strings.Contains(p.Detail, "retry the same request") {
		t.Errorf("detail %q does not say to retry", p.Detail)
	}
	a.svc.store.lostCommit = nil
	a.svc.store.SetDelay(nil)
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r2.ID)+"/cancel", ""), http.StatusOK, &got)
	if inv := a.inventory(product); got.Status != StatusCancelled || inv.Reserved != 0 || inv.Available != 10 {
		t.Errorf("after the retried cancel: %+v, %+v; want cancelled, every unit free", got, inv)
	}
}

// terminateOthers ends every other session on the test's database, as an
// operator's pg_terminate_backend or a failover would.
func (a *testAPI) terminateOthers(t *testing.T) {
	t.Helper()
	if err := a.terminateSessions("true"); err != nil {
		t.Fatal(err)
	}
}

// terminateSessions ends the other sessions on the test's database for
// which the SQL condition where holds.
func (a *testAPI) terminateSessions(where string) error {
	_, err := a.db.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND `+where)
	return err
}

// TestACutConnectionIsNever500: the database sessions are terminated in
// the middle of a reservation and of a cancel. Each is answered with what
// happened or 503 "retry the same request", never 500, and the retry
// finishes it with every unit accounted for. Before the saga the
// reservation answered 500.
func TestACutConnectionIsNever500(t *testing.T) {
	t.Parallel()
	const product = 56
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 10, 0)
	var once sync.Once
	a.svc.hooks.betweenReadAndWrite = func(context.Context, int64) { once.Do(func() { a.terminateOthers(t) }) }
	rec := a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "cut-session"))
	a.svc.hooks.betweenReadAndWrite = nil
	if rec.Code != http.StatusCreated {
		p := checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")
		if !strings.Contains(p.Detail, "same idempotency key") {
			t.Errorf("detail %q does not say to retry with the same key", p.Detail)
		}
	}
	var r Reservation
	rec = a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 2, "cut-session"))
	if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
		t.Fatalf("the retry answered %d %s", rec.Code, rec.Body.String())
	}
	decodeJSON(t, rec, rec.Code, &r)

	_, disarm := a.armCut(1, func(string) { a.terminateOthers(t) })
	rec = a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", "")
	disarm()
	if rec.Code != http.StatusOK {
		checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")
	}
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations/"+itoa(r.ID)+"/cancel", ""), http.StatusOK, nil)
	if _, err := a.svc.Reconcile(context.Background()); err != nil {
		t.Error(err)
	}
	if inv := a.inventory(product); inv.Reserved != 0 || inv.Available != 10 {
		t.Errorf("after the retries: %+v, want every unit free", inv)
	}
}
