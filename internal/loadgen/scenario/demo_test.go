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

// TestDemo runs the endless mix for a few seconds against two "replicas"
// (the same API twice, as compose runs two): while it runs, loadgen's own
// /metrics shows browse, reserve and stampede traffic; the bursts switched
// the cache strategy; the run stops by itself at -duration with exit 0.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis, a few seconds of load")
	}
	url, _ := startTestAPI(t, testAPI{adminToken: "t"})
	metricsAddr := testenv.FreeAddr(t)
	var stdout, stderr bytes.Buffer
	args := []string{
		"-target", url + "," + url, "-admin-token", "t", "-metrics-addr", metricsAddr,
		"-rate", "50", "-duration", "4s", "-products", "300", "-skus", "1,2",
		"-demo-reserve-rate", "20", "-burst-every", "1500ms", "-burst-for", "700ms", "-burst-rate", "100",
		"-phases", "ttl", "demo",
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runArgs(ctx, args, &stdout, &stderr) }()

	// Poll loadgen's /metrics until every kind of traffic shows up.
	want := []string{`scenario="browse"`, `scenario="reserve"`, `scenario="stampede"`, `endpoint="cancel"`, `endpoint="top_products"`,
		`endpoint="category_stats",scenario="browse"`, "loadgen_request_duration_seconds_bucket"}
	var body string
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if containsAll(body, want) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !containsAll(body, want) {
		t.Errorf("loadgen /metrics lacks some of %q:\n%s", want, body)
	}
	if err := <-done; err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr.String())
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

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
