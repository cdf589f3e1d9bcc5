package catalog

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stampede-lab/stampede/internal/cachex"
)

// TestAdminPatchFaultsCombinesKnobs: PATCH sets the knobs it names and
// keeps the others, so two calls combine (PUT would have cleared the
// first); bad input is a 4xx problem and changes nothing.
func TestAdminPatchFaultsCombinesKnobs(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	var f Faults
	decodeJSON(t, a.admin(http.MethodPatch, "/admin/faults", `{"cache_redis_down_percent": 30}`), http.StatusOK, &f)
	decodeJSON(t, a.admin(http.MethodPatch, "/admin/faults", `{"db_latency_ms": 200, "db_latency_percent": 50}`), http.StatusOK, &f)
	want := Faults{CacheRedisDownPercent: 30, DBLatencyMS: 200, DBLatencyPercent: 50}
	if f != want || a.faults.Get() != want {
		t.Fatalf("after two PATCHes: answered %+v, injector %+v, want %+v", f, a.faults.Get(), want)
	}
	decodeJSON(t, a.admin(http.MethodPatch, "/admin/faults", `{"cache_redis_down_percent": 0}`), http.StatusOK, &f)
	want.CacheRedisDownPercent = 0
	if f != want {
		t.Errorf("a knob set to 0 by PATCH: %+v, want %+v", f, want)
	}
	for _, c := range []struct {
		name, body, typ string
		status          int
	}{
		{"out of range", `{"db_latency_percent": 101}`, "/problems/invalid-parameter", 422},
		{"one good, one out of range", `{"db_latency_ms": 5, "reservation_pause_ms": 60001}`, "/problems/invalid-parameter", 422},
		{"unknown knob", `{"redis_latency_ms": 5}`, "/problems/bad-request", 400},
		{"wrong type", `{"db_latency_ms": "5"}`, "/problems/bad-request", 400},
		{"a fraction", `{"db_latency_ms": 1.5}`, "/problems/bad-request", 400},
		{"malformed", `{`, "/problems/bad-request", 400},
		{"not an object", `[]`, "/problems/bad-request", 400},
	} {
		checkProblem(t, a.admin(http.MethodPatch, "/admin/faults", c.body), c.status, c.typ)
	}
	if got := a.faults.Get(); got != want {
		t.Errorf("after refused PATCHes: %+v, want %+v", got, want)
	}
}

// TestFaultsPatchIsAtomic: concurrent PATCHes of different knobs all land
// (none overwrites another's knob with a value it read before).
func TestFaultsPatchIsAtomic(t *testing.T) {
	t.Parallel()
	var in Injector
	var wg sync.WaitGroup
	for i := 1; i <= 100; i++ {
		v := i % 101
		wg.Go(func() {
			if _, err := in.Patch(FaultsPatch{DBLatencyMS: &v}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if _, err := in.Patch(FaultsPatch{ReservationPausePercent: &v}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	last := 50
	if _, err := in.Patch(FaultsPatch{CacheRedisDownPercent: &last}); err != nil {
		t.Fatal(err)
	}
	if f := in.Get(); f.DBLatencyMS == 0 || f.ReservationPausePercent == 0 || f.CacheRedisDownPercent != 50 {
		t.Errorf("after concurrent patches: %+v", f)
	}
}

// TestAdminResetRestoresTheStart: POST /admin/reset turns every knob off
// and sets every cache's strategy and beta and the reservation mode back
// to what the instance started with (PUT {} on the faults leaves a cache's
// strategy as it is); a body other than {} is refused.
func TestAdminResetRestoresTheStart(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	startMode := a.svc.Mode()
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPut, "/admin/caches/category_stats", `{"strategy": "ttl"}`},
		{http.MethodPut, "/admin/caches/product", `{"strategy": "none", "beta": 3}`},
		{http.MethodPatch, "/admin/faults", `{"db_latency_ms": 100, "db_latency_percent": 10, "cache_redis_down_percent": 5}`},
		{http.MethodPut, "/admin/reservation-mode", `{"mode": "unsafe"}`},
	} {
		decodeJSON(t, a.admin(c.method, c.path, c.body), http.StatusOK, nil)
	}
	decodeJSON(t, a.admin(http.MethodPut, "/admin/faults", `{}`), http.StatusOK, nil)
	if s := a.svc.Caches()["category_stats"].Strategy(); s != cachex.TTL {
		t.Fatalf("PUT /admin/faults {} changed a strategy (%s): the test no longer shows what reset adds", s)
	}
	checkProblem(t, a.admin(http.MethodPost, "/admin/reset", `{"faults": {}}`), http.StatusBadRequest, "/problems/bad-request")
	var got Settings
	decodeJSON(t, a.admin(http.MethodPost, "/admin/reset", ""), http.StatusOK, &got)
	if got.Faults != (Faults{}) || a.faults.Get() != (Faults{}) || got.Mode != startMode || a.svc.Mode() != startMode {
		t.Errorf("after reset: faults %+v (injector %+v), mode %s (service %s), want all off and %s", got.Faults, a.faults.Get(), got.Mode, a.svc.Mode(), startMode)
	}
	for name, c := range a.svc.Caches() {
		if c.Strategy() != cachex.XFetch || got.Caches[name].Strategy != cachex.XFetch || c.Beta() != 1 || *got.Caches[name].Beta != 1 {
			t.Errorf("cache %s after reset: %s beta %g (answered %+v), want xfetch beta 1", name, c.Strategy(), c.Beta(), got.Caches[name])
		}
	}
	decodeJSON(t, a.admin(http.MethodPost, "/admin/reset", `{}`), http.StatusOK, &got)
}
