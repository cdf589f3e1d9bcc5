package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/loadgen/scrape"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// failEveryOtherCancel is a reverse proxy to target that answers every
// other cancellation 502 without passing it on.
func failEveryOtherCancel(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/cancel") && n.Add(1)%2 == 1 {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// demoState reads loadgen's own endpoints: whether the demo is paused and
// how many requests it has scheduled.
func demoState(t *testing.T, addr string) (paused bool, requests float64) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/demo")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Paused bool }
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, err := scrape.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return st.Paused, m.Sum("loadgen_requests_total", nil)
}

func post(t *testing.T, u string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", u, resp.Status)
	}
}

// activeDemoHolds counts the demo's reservations still holding stock.
func activeDemoHolds(t *testing.T, db *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM reservations WHERE status = 'active' AND idempotency_key LIKE 'demo-%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually polls cond every 50 ms until it holds, for up to demoWait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(demoWait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within %v: %s", demoWait, what)
}

// TestDemoPausesResumesAndLeavesNoHolds runs the endless demo through a
// proxy that fails every other cancellation: a pause stops all its traffic
// and cancels its holds (failed cancels are retried), a resume starts it
// again, another scenario's -pause-demo pauses it for that run only, and a
// stopped demo leaves no hold behind.
func TestDemoPausesResumesAndLeavesNoHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis, a few seconds of load")
	}
	api, db := startTestAPI(t, testAPI{adminToken: "t"})
	proxy := failEveryOtherCancel(t, api)
	addr := testenv.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runArgs(ctx, []string{"-target", proxy.URL, "-admin-token", "t", "-metrics-addr", addr, "-duration", "0",
			"-rate", "20", "-products", "300", "-skus", "1,2", "-demo-reserve-rate", "40",
			"-burst-every", "1s", "-burst-for", "300ms", "-burst-rate", "50", "-phases", "ttl", "demo"}, &stdout, &stderr)
	}()
	eventually(t, "demo holds some stock", func() bool { return activeDemoHolds(t, db) > 0 })

	post(t, "http://"+addr+"/demo/pause") // answers once the demo has settled
	if n := activeDemoHolds(t, db); n != 0 {
		t.Errorf("the pause was answered with %d demo holds still active", n)
	}
	paused, n1 := demoState(t, addr)
	time.Sleep(300 * time.Millisecond)
	_, n2 := demoState(t, addr)
	if !paused || n2 != n1 {
		t.Errorf("paused demo: paused=%v, requests %v then %v", paused, n1, n2)
	}

	post(t, "http://"+addr+"/demo/resume")
	eventually(t, "a resumed demo sends requests again", func() bool { _, n := demoState(t, addr); return n > n2 })

	// Another run with -pause-demo pauses it for its length only.
	var sawPaused atomic.Bool
	pollCtx, stopPoll := context.WithCancel(ctx)
	go func() {
		for pollCtx.Err() == nil {
			if p, _ := demoState(t, addr); p {
				sawPaused.Store(true)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var out, errOut bytes.Buffer
	err := runArgs(ctx, []string{"-target", api, "-metrics-addr", "", "-pause-demo", "http://" + addr, "-rate", "20",
		"-duration", "500ms", "-products", "300", "-report-dir", t.TempDir(), "browse"}, &out, &errOut)
	stopPoll()
	if err != nil {
		t.Fatalf("browse with -pause-demo: %v\n%s", err, errOut.String())
	}
	if p, _ := demoState(t, addr); !sawPaused.Load() || p {
		t.Errorf("-pause-demo: seen paused during the run %v, paused after %v; want true, false", sawPaused.Load(), p)
	}
	// Pauses are counted: a run's resume does not undo an operator's pause.
	post(t, "http://"+addr+"/demo/pause")
	if err := runArgs(ctx, []string{"-target", api, "-metrics-addr", "", "-pause-demo", "http://" + addr, "-rate", "20",
		"-duration", "300ms", "-products", "300", "-report-dir", t.TempDir(), "browse"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if p, _ := demoState(t, addr); !p {
		t.Error("a -pause-demo run resumed a demo the operator had paused")
	}
	post(t, "http://"+addr+"/demo/resume")

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr.String())
	}
	if n := activeDemoHolds(t, db); n != 0 {
		t.Errorf("a stopped demo left %d holds", n)
	}
}

// TestDemoSettlesLostAnswers: the demo stops by itself at -duration, and
// reservations whose answer it never got are found by replaying their key
// and cancelled when it stops.
func TestDemoSettlesLostAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis")
	}
	api, db, ctx := stockedAPI(t, 1000, 1, 2)
	proxy := loseAnswers(t, api, 3, hangUp)
	var out, errOut bytes.Buffer
	err := runArgs(ctx, []string{"-target", proxy.URL, "-admin-token", "t", "-metrics-addr", "", "-duration", "1500ms", "-rate", "1",
		"-products", "300", "-skus", "1,2", "-demo-reserve-rate", "20", "-burst-every", "1h", "-burst-for", "1s", "demo"}, &out, &errOut)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the demo ran until the test's deadline (%v), not -duration", ctx.Err())
	}
	if n := activeDemoHolds(t, db); n != 0 {
		t.Errorf("the demo left %d holds whose answer it lost", n)
	}
}

// TestPauseDemoRefusesWhatIsNotADemo: -pause-demo at a server that answers
// 200 but is not a demo stops the run before it starts.
func TestPauseDemoRefusesWhatIsNotADemo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	err := runArgs(t.Context(), []string{"-target", srv.URL, "-metrics-addr", "", "-pause-demo", srv.URL, "-rate", "10",
		"-duration", "100ms", "-report-dir", t.TempDir(), "browse"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "-pause-demo") {
		t.Errorf("run = %v, want a -pause-demo error", err)
	}
}
