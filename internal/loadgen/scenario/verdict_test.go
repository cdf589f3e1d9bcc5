package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// TestReserveVerdictCanFail: a run that created nothing, one drowned in
// busy answers and one with outcomes it could not settle all fail; a
// healthy one passes.
func TestReserveVerdictCanFail(t *testing.T) {
	healthy := func() *ReserveSummary {
		return &ReserveSummary{Load: Load{Requests: 100}, Created: 20, Insufficient: 70, Busy: 10}
	}
	if err := healthy().check(0.01, 0.25); err != nil {
		t.Errorf("healthy run: %v", err)
	}
	for name, c := range map[string]struct {
		mutate func(*ReserveSummary)
		want   error
	}{
		"nothing created": {func(s *ReserveSummary) { s.Created, s.Insufficient = 0, 90 }, errNothingTested},
		"mostly busy":     {func(s *ReserveSummary) { s.Busy, s.Insufficient = 60, 20 }, errNothingTested},
		"unresolved":      {func(s *ReserveSummary) { s.Unknown, s.Unresolved = 2, 1 }, errInvariant},
		"error rate":      {func(s *ReserveSummary) { s.ErrorRate = 0.05 }, errErrorRate},
	} {
		s := healthy()
		c.mutate(s)
		if err := s.check(0.01, 0.25); !errors.Is(err, c.want) || s.Passed {
			t.Errorf("%s: %v (passed %v), want %v", name, err, s.Passed, c.want)
		}
	}
}

// TestReserveFailsWhenEveryAnswerIsBusy: an API that answers every
// reservation 503 busy never exercised the invariant; the run says so and
// exits non-zero (it used to report "invariant holds" and exit 0).
func TestReserveFailsWhenEveryAnswerIsBusy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/inventory") {
			fmt.Fprint(w, `{"product_id":1,"stock":20,"reserved":0,"available":20}`)
			return
		}
		if r.URL.Path == "/metrics" {
			fmt.Fprintln(w, "catalog_reservations_total{result=\"lock_timeout\"} 0")
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"/problems/busy","title":"busy","status":503}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := runArgs(t.Context(), []string{"-target", srv.URL, "-rate", "50", "-max-requests", "20", "-duration", "0",
		"-metrics-addr", "", "-skus", "1", "-report-dir", dir, "reserve"}, &stdout, &stderr)
	if !errors.Is(err, errNothingTested) {
		t.Fatalf("run = %v, want errNothingTested\n%s", err, stdout.String())
	}
	sum, err := ReadReserveSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passed || sum.Busy != 20 || sum.Created != 0 {
		t.Errorf("passed=%v busy=%d created=%d", sum.Passed, sum.Busy, sum.Created)
	}
}

// hangUp loses an answer by closing the client's connection.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// unavailable loses an answer behind a plain 503 without a problem type.
func unavailable(w http.ResponseWriter) {
	http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
}

// loseAnswers is a reverse proxy to target that, for the first n
// reservations, lets the API run the request and then answers with lose
// instead: a reply lost after the command ran.
func loseAnswers(t *testing.T, target string, n int64, lose func(http.ResponseWriter)) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var lost atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/reservations" || lost.Add(1) > n {
			proxy.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(httptest.NewRecorder(), r) // the API runs it; the answer is lost
		lose(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReserveReconcilesLostAnswers: reservations whose answer was lost
// after the API made them are settled by replaying their idempotency key,
// so the invariant counts them and holds (it used to report them as
// unaccounted units).
func TestReserveReconcilesLostAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis")
	}
	api, db, ctx := stockedAPI(t, 1000, 1, 2)
	const lost = 5
	proxy := loseAnswers(t, api, lost, hangUp)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := runArgs(ctx, []string{"-target", proxy.URL, "-rate", "50", "-max-requests", "40", "-duration", "0",
		"-metrics-addr", "", "-skus", "1,2", "-replay-percent", "0", "-max-error-rate", "0.5", "-report-dir", dir, "reserve"}, &stdout, &stderr)
	t.Logf("stdout:\n%s", stdout.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sum, err := ReadReserveSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unknown != lost || sum.ReconciledCreated != lost || sum.Unresolved != 0 || !sum.Invariant.Passed {
		t.Errorf("unknown=%d reconciled created=%d not=%d unresolved=%d invariant=%+v",
			sum.Unknown, sum.ReconciledCreated, sum.ReconciledNotCreated, sum.Unresolved, sum.Invariant)
	}
	var active int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM reservations WHERE status = 'active' AND product_id IN (1, 2)`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != sum.Created {
		t.Errorf("%d active reservations in the database, the run counted %d created", active, sum.Created)
	}
}

// TestReserveReconcilesAPlain503: a 503 that is not /problems/busy says
// nothing about the reservation, so it is settled like a lost answer.
func TestReserveReconcilesAPlain503(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis")
	}
	api, _, ctx := stockedAPI(t, 1000, 1)
	proxy := loseAnswers(t, api, 3, unavailable)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := runArgs(ctx, []string{"-target", proxy.URL, "-rate", "20", "-max-requests", "20", "-duration", "0", "-metrics-addr", "",
		"-skus", "1", "-replay-percent", "0", "-max-error-rate", "0.5", "-report-dir", dir, "reserve"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sum, err := ReadReserveSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Busy != 0 || sum.Unknown != 3 || sum.ReconciledCreated != 3 {
		t.Errorf("busy=%d unknown=%d reconciled=%d, want 0, 3, 3", sum.Busy, sum.Unknown, sum.ReconciledCreated)
	}
}

// TestReserveResetsTheKnobWhenOneReplicaRefusesIt: a replica that took the
// pause knob gets it reset even when another replica could not be set.
func TestReserveResetsTheKnobWhenOneReplicaRefusesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis")
	}
	api, _, ctx := stockedAPI(t, 1000, 1)
	d := httptest.NewServer(http.NotFoundHandler())
	dead := d.URL
	d.Close()
	var stdout, stderr bytes.Buffer
	if err := runArgs(ctx, []string{"-target", api + "," + dead, "-admin-token", "t", "-rate", "10", "-duration", "500ms",
		"-metrics-addr", "", "-skus", "1", "-pause-percent", "100", "-report-dir", t.TempDir(), "reserve"}, &stdout, &stderr); err == nil {
		t.Fatal("a run with a dead replica succeeded")
	}
	client, err := loadgen.NewClient(api, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var faults map[string]int
	if err := client.AdminGet(ctx, "/admin/faults", "t", &faults); err != nil || faults["reservation_pause_percent"] != 0 {
		t.Errorf("faults left on the live replica: %v %v", faults, err)
	}
}

// TestLostLockCancelledMidRunGivesTheUnitsBack: Ctrl-C in the middle of a
// mode cancels the reservations it made before the stock is restored, so
// loadgen never leaves more reserved than in stock.
func TestLostLockCancelledMidRunGivesTheUnitsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis")
	}
	api, db, ctx := stockedAPI(t, 5, 2)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Ctrl-C once the run holds reservations (or at the latest after
	// demoWait, which a run of 3s does not reach).
	go func() {
		for deadline := time.Now().Add(demoWait); time.Now().Before(deadline) && rctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			var active int
			if err := db.QueryRow(rctx, `SELECT count(*) FROM reservations WHERE product_id = 2 AND status = 'active'`).Scan(&active); err == nil && active > 0 {
				break
			}
		}
		cancel()
	}()
	var stdout, stderr bytes.Buffer
	_ = runArgs(rctx, []string{"-target", api, "-admin-token", "t", "-rate", "20", "-duration", "3s", "-metrics-addr", "",
		"-skus", "2", "-replay-percent", "0", "-modes", "lock", "-stock", "20", "-report-dir", t.TempDir(), "lostlock"}, &stdout, &stderr)
	var stock, reserved, active int
	if err := db.QueryRow(ctx, `SELECT stock, reserved, (SELECT count(*) FROM reservations WHERE product_id = 2 AND status = 'active')
		FROM inventory WHERE product_id = 2`).Scan(&stock, &reserved, &active); err != nil {
		t.Fatal(err)
	}
	if stock != 5 || reserved != 0 || active != 0 {
		t.Errorf("after a cancelled run: stock %d, reserved %d, %d active reservations; want 5, 0, 0", stock, reserved, active)
	}
}
