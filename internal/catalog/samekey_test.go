package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAStaleAttemptLeavesItsKeysNewerAttemptAlone: two attempts of one
// request (one idempotency key) in fenced mode, the second sent while the
// first is stopped. A reads the warehouse and stops; its lock expires; B
// takes the lock with a newer token, takes the units and stops before it
// makes the intent active; A wakes, its write is refused, and A answers.
// Then B goes on. A refused take must not remove an intent that a newer
// attempt carries on: if it does, B's units are taken with no hold to
// record them (orphaned), and A's answer says nothing was reserved while B
// reserved it.
func TestAStaleAttemptLeavesItsKeysNewerAttemptAlone(t *testing.T) {
	t.Parallel()
	const (
		product = 45
		qty     = 3
		key     = "same-key"
	)
	a := newTestAPI(t, apiOptions{lockWait: time.Minute}) // B waits for A's lock to expire
	a.setInventory(product, 5, 0)
	a.setMode(ModeFenced)
	// A's write goes out on a context its lock's loss does not end.
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{"reservation_pause_ms": 1, "reservation_pause_percent": 100}`),
		http.StatusOK, nil)

	aRead, bTook, aAnswered := make(chan struct{}), make(chan struct{}), make(chan struct{})
	tookB, answeredA := sync.OnceFunc(func() { close(bTook) }), sync.OnceFunc(func() { close(aAnswered) })
	defer tookB() // also when the test fails midway
	defer answeredA()
	var first atomic.Bool
	a.svc.hooks.betweenReadAndWrite = func(context.Context, int64) {
		if first.CompareAndSwap(false, true) { // A, not B
			close(aRead)
			<-bTook
		}
	}
	a.svc.hooks.beforeActivate = func(context.Context, int64) {
		if !first.Load() {
			return
		}
		tookB()
		<-aAnswered
	}
	send := func() chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- a.do(http.MethodPost, "/v1/reservations", reserveBody(product, qty, key)) }()
		return done
	}

	doneA := send()
	wait(t, aRead, "A never read the warehouse")
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, nil) // B must not pause
	doneB := send()
	wait(t, bTook, "B never took the units")
	recA := <-doneA
	answeredA()
	recB := <-doneB

	for name, rec := range map[string]*httptest.ResponseRecorder{"A": recA, "B": recB} {
		if !slices.Contains([]int{http.StatusCreated, http.StatusOK, http.StatusServiceUnavailable}, rec.Code) {
			t.Errorf("%s answered %d %s; the key's reservation was made", name, rec.Code, rec.Body.String())
		}
	}
	for _, p := range a.ledgerProblems(product, true, "after both answered") {
		t.Error(p)
	}
	if n := a.queryInt("SELECT count(*) FROM reservations WHERE idempotency_key = $1 AND status = 'active'", key); n != 1 {
		t.Errorf("%d active reservations under the key, want 1", n)
	}
}

// wait waits for ch to close or receive, for up to a minute.
func wait(t *testing.T, ch <-chan struct{}, failure string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatal(failure)
	}
}
