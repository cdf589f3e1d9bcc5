package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// TestDemo runs the endless mix against two "replicas" (the same API
// twice, as compose runs two) until loadgen's own /metrics shows browse,
// reserve and stampede traffic, then stops it: the run ends with exit 0
// and the final table, and the bursts had switched the cache strategy.
// (TestDemoSettlesLostAnswers checks that a demo stops by itself at
// -duration.)
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis, a few seconds of load")
	}
	url, _ := startTestAPI(t, testAPI{adminToken: "t"})
	metricsAddr := testenv.FreeAddr(t)
	var stdout, stderr bytes.Buffer
	args := []string{
		"-target", url + "," + url, "-admin-token", "t", "-metrics-addr", metricsAddr,
		"-rate", "50", "-duration", "0", "-products", "300", "-skus", "1,2",
		"-demo-reserve-rate", "20", "-burst-every", "1500ms", "-burst-for", "700ms", "-burst-rate", "100",
		"-phases", "ttl", "demo",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runArgs(ctx, args, &stdout, &stderr) }()

	// Poll loadgen's /metrics until every kind of traffic shows up: the
	// first burst and the first cancellation take a few seconds of the
	// demo's schedule, and a busy machine can take longer.
	want := []string{`scenario="browse"`, `scenario="reserve"`, `scenario="stampede"`, `endpoint="cancel"`, `endpoint="top_products"`,
		`endpoint="category_stats",scenario="browse"`, "loadgen_request_duration_seconds_bucket"}
	var body string
	for deadline := time.Now().Add(demoWait); time.Now().Before(deadline) && !containsAll(body, want); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the demo stopped on its own: %v\nstderr:\n%s", err, stderr.String())
		default:
		}
		if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
	}
	if !containsAll(body, want) {
		t.Errorf("loadgen /metrics lacks some of %q after %v:\n%s", want, demoWait, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(demoWait):
		t.Fatalf("the demo did not stop within %v of being cancelled", demoWait)
	}
	t.Logf("stdout:\n%s", stdout.String())

	// The burst set category_stats to ttl through the admin API.
	req, _ := http.NewRequest(http.MethodGet, url+"/admin/caches", nil)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var caches map[string]struct {
		Strategy string `json:"strategy"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&caches); err != nil {
		t.Fatal(err)
	}
	if got := caches["category_stats"].Strategy; got != "ttl" {
		t.Errorf("category_stats strategy after a burst = %q, want ttl (%+v)", got, caches)
	}
	for _, s := range []string{"browse", "reserve", "stampede"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("final table lacks %s:\n%s", s, stdout.String())
		}
	}
}

// demoWait bounds the waits of the demo tests for something the demo must
// do: how long it may take, not how fast it should be.
const demoWait = time.Minute

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
