package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// blockActivations holds the product's inventory row locked in a
// transaction of its own, as another session would, until the returned
// release is called: every activation of the product waits for it.
func (a *testAPI) blockActivations(productID int64) (release func()) {
	a.t.Helper()
	ctx := context.Background()
	tx, err := a.db.Begin(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM inventory WHERE product_id = $1 FOR UPDATE", productID); err != nil {
		a.t.Fatal(err)
	}
	return func() { _ = tx.Rollback(ctx) }
}

// terminateLockWaiters ends, until done is closed, every session of the
// test's database that waits for a row lock: a request blocked behind
// blockActivations sees its connection cut.
func (a *testAPI) terminateLockWaiters(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
		_ = a.terminateSessions(`wait_event_type = 'Lock'`)
	}
}

// TestARetryNeverOrphansAnAppliedTake forces the interleaving of two
// attempts of one request in fenced mode, on two instances. A takes the
// unit, but its activation is blocked (another session holds the
// inventory row) and cut, so A answers 503 "retry" and its intent stays
// pending with its take applied. Then something may happen in between (a
// stocktake, the reconciler), and the client retries on instance B, whose
// take fails before it reads the moves: its lock runs out, or a newer
// holder's access fences it out. B must not remove the intent nor answer
// "nothing was reserved": the key's unit is taken. Every answer must agree
// with the state, and no unit may be orphaned or oversold at any step.
// Before the fix B answered 409 fenced, removed the intent, and one unit
// stayed orphaned at rest (Flaws.AbandonUnlooked puts that back).
func TestARetryNeverOrphansAnAppliedTake(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	b := a.sibling()
	for i, c := range []struct {
		name    string
		between func(a *testAPI, product int64)
		refuseB func(b *testAPI, product int64) func(ctx context.Context, _ int64)
	}{
		{"B's lock runs out", nil, loseLock},
		{"a newer holder fences B out", nil, fenceOut},
		{"a stocktake in between", stocktake, loseLock},
		{"the reconciler in between", reconcile, loseLock},
	} {
		t.Run(c.name, func(t *testing.T) {
			product := int64(80 + i)
			key := "retried-while-blocked-" + itoa(product)
			a.setInventory(product, 3, 0)
			check := func(atRest bool, when string) {
				t.Helper()
				for _, p := range a.ledgerProblems(product, atRest, when) {
					t.Error(p)
				}
				if n := a.orphaned(product); n != 0 {
					t.Errorf("%s: %d units orphaned", when, n)
				}
			}
			recA := a.takeThenBlock(product, key)
			checkProblem(t, recA, http.StatusServiceUnavailable, "/problems/unavailable")
			check(false, "after A's 503")
			if c.between != nil {
				c.between(a, product)
				check(false, "in between")
			}
			b.svc.hooks.beforeTake = firstOnly(c.refuseB(b, product)) // not the newer holder's
			recB := b.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, key))
			b.svc.hooks.beforeTake = nil
			decodeJSON(t, b.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, nil)
			check(false, "after B's answer")
			agree(t, recB, a, key, "B")

			reconcile(a, product)
			check(true, "at rest")
			if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = $1 AND status = 'active'", key); n != 1 {
				t.Errorf("at rest: %d active reservations under the key, want 1 (its unit was taken)", n)
			}
			decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, key+"-next")), http.StatusCreated, nil)
		})
	}
}

// firstOnly returns a hook that runs hook on its first call only.
func firstOnly(hook func(context.Context, int64)) func(context.Context, int64) {
	var done atomic.Bool
	return func(ctx context.Context, product int64) {
		if done.CompareAndSwap(false, true) {
			hook(ctx, product)
		}
	}
}

// takeThenBlock sends a reservation whose take lands and whose activation is
// blocked by another session and cut, each time it is tried: its answer.
func (a *testAPI) takeThenBlock(product int64, key string) *httptest.ResponseRecorder {
	release := a.blockActivations(product)
	defer release()
	answered := make(chan struct{})
	defer close(answered)
	go a.terminateLockWaiters(answered)
	return a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, key))
}

// loseLock is a beforeTake hook that waits until the attempt's lock runs
// out (the tests' locks have no watchdog): its take is never sent.
func loseLock(b *testAPI, _ int64) func(ctx context.Context, _ int64) {
	return func(ctx context.Context, _ int64) {
		select { // the lock's context: it ends when the lock runs out
		case <-ctx.Done():
		case <-time.After(time.Minute):
			b.t.Error("the lock was never lost")
		}
	}
}

// fenceOut is a beforeTake hook that waits until the attempt's lock runs out,
// then has another buyer reserve a unit of the product under a newer
// token: the attempt's take, sent on a context of its own (the pause
// knob's, left on until the test answers), is refused as stale before it
// reads the moves.
func fenceOut(b *testAPI, product int64) func(ctx context.Context, _ int64) {
	decodeJSON(b.t, b.admin(http.MethodPut, "/admin/faults", `{"reservation_pause_ms": 1, "reservation_pause_percent": 100}`), http.StatusOK, nil)
	return func(ctx context.Context, _ int64) {
		loseLock(b, product)(ctx, product)
		decodeJSON(b.t, b.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, "newer-holder-"+itoa(product))), http.StatusCreated, nil)
	}
}

// stocktake counts the product's stock again, as an operator would.
func stocktake(a *testAPI, product int64) {
	decodeJSON(a.t, a.admin(http.MethodPut, "/admin/inventory/"+itoa(product), `{"stock": 3}`), http.StatusOK, nil)
}

// reconcile runs the reconciler with every intent old enough to settle.
func reconcile(a *testAPI, _ int64) {
	a.svc.pendingAge = time.Nanosecond
	if _, err := a.svc.Reconcile(context.Background()); err != nil {
		a.t.Error(err)
	}
}

// agree fails t unless the answer rec to a reservation under key agrees
// with the database now: a 201 or 200 names the key's active hold, a 409
// leaves nothing under the key (no hold, no take), a 503 is a retry.
func agree(t *testing.T, rec *httptest.ResponseRecorder, a *testAPI, key, who string) {
	t.Helper()
	holds := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = $1 AND status <> 'pending'", key)
	takes := a.queryInt("SELECT count(*) FROM warehouse_moves WHERE move_key = $1", TakeKey(key))
	switch rec.Code {
	case http.StatusCreated, http.StatusOK:
		if holds != 1 {
			t.Errorf("%s answered %d, but the key has %d holds", who, rec.Code, holds)
		}
	case http.StatusConflict:
		if holds+takes != 0 {
			t.Errorf("%s answered %d %s (nothing reserved), but the key has %d holds and %d takes applied", who, rec.Code, rec.Body.String(), holds, takes)
		}
	case http.StatusServiceUnavailable:
		checkProblem(t, rec, http.StatusServiceUnavailable, "/problems/unavailable")
	default:
		t.Errorf("%s answered %d %s", who, rec.Code, rec.Body.String())
	}
}

// orphaned is the units of the product's takes that no reservation
// records, as the audit counts them.
func (a *testAPI) orphaned(productID int64) int {
	a.t.Helper()
	ls, err := Audit(context.Background(), a.db, []int64{productID})
	if err != nil || len(ls) != 1 {
		a.t.Fatalf("audit: %v %v", ls, err)
	}
	return ls[0].Orphaned
}

// TestTheRetryCheckCatchesAbandonUnlooked proves the retry test can fail:
// with the rule before the fix (Flaws.AbandonUnlooked), B's lock runs out
// before its take and B removes the intent A's take landed for, answers
// 409 fenced, and the unit is orphaned.
func TestTheRetryCheckCatchesAbandonUnlooked(t *testing.T) {
	t.Parallel()
	const (
		product = 84
		key     = "abandoned-unlooked"
	)
	a := newTestAPI(t, apiOptions{})
	b := a.sibling()
	b.svc.flaws.AbandonUnlooked = true
	a.setInventory(product, 3, 0)
	checkProblem(t, a.takeThenBlock(product, key), http.StatusServiceUnavailable, "/problems/unavailable")
	b.svc.hooks.beforeTake = loseLock(b, product)
	checkProblem(t, b.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, key)), http.StatusConflict, "/problems/fenced")
	reconcile(a, product)
	if n := a.orphaned(product); n != 1 {
		t.Errorf("%d units orphaned at rest, want the 1 of A's take", n)
	}
	if len(a.ledgerProblems(product, true, "at rest")) == 0 {
		t.Error("the ledger at rest finds nothing wrong")
	}
}

// TestAbandonNeverRemovesAnIntentWhoseTakeLanded: the abandon's guard looks
// at the warehouse's moves itself, so that no caller, the reconciler with
// the newest token included, can remove an intent whose take is applied.
func TestAbandonNeverRemovesAnIntentWhoseTakeLanded(t *testing.T) {
	t.Parallel()
	const product = 85
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 3, 0)
	ctx := context.Background()
	r, _, err := a.svc.store.Intend(ctx, Hold{ProductID: product, Quantity: 1, IdempotencyKey: "landed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.svc.warehouse.Take(ctx, takeMove(r), Fence{}, nil); err != nil {
		t.Fatal(err)
	}
	if abandoned, err := a.svc.store.Abandon(ctx, r.ID, 1<<40); err != nil || abandoned {
		t.Errorf("Abandon of an intent whose take landed: %v, %v", abandoned, err)
	}
	if r, activated, err := a.svc.store.Activate(ctx, r.ID, 1); err != nil || !activated || r.Status != StatusActive {
		t.Errorf("Activate after the refused abandon: %+v %v %v", r, activated, err)
	}
	for _, p := range a.ledgerProblems(product, true, "at rest") {
		t.Error(p)
	}
}

// TestMarkGivenWaitsForTheGive: an ended hold's give stays due until the
// warehouse applied it, whoever marks it, so that a stale marker cannot
// leave its units owed with nobody to give them back.
func TestMarkGivenWaitsForTheGive(t *testing.T) {
	t.Parallel()
	const product = 86
	a := newTestAPI(t, apiOptions{})
	a.setInventory(product, 3, 0)
	var r Reservation
	decodeJSON(t, a.do(http.MethodPost, "/v1/reservations", reserveBody(product, 1, "owed")), http.StatusCreated, &r)
	ctx := context.Background()
	if _, ended, err := a.svc.store.CancelReservation(ctx, r.ID); err != nil || !ended {
		t.Fatal(ended, err)
	}
	if err := a.svc.store.MarkGiven(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if due := a.queryInt("SELECT count(*) FROM reservations WHERE id = $1 AND give_due", r.ID); due != 1 {
		t.Error("marked given before the warehouse applied the give")
	}
	reconcile(a, product)
	for _, p := range a.ledgerProblems(product, true, "after the reconciler") {
		t.Error(p)
	}
}
