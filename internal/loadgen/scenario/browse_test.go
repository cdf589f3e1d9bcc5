package scenario

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen/report/reporttest"
)

func TestBrowserMix(t *testing.T) {
	cfg := Mix{Products: 1000, ZipfS: 1.1, BatchPercent: 20, SearchPercent: 30, BatchSize: 5}
	b := newBrowser(cfg, 1)
	counts := map[string]int{}
	hot := 0
	const n = 10000
	for range n {
		ep, path := b.next()
		counts[ep]++
		switch ep {
		case endpointProduct:
			if path == "/v1/products/1" {
				hot++
			}
		case endpointProducts:
			if ids := strings.TrimPrefix(path, "/v1/products?ids="); strings.Count(ids, ",") != cfg.BatchSize-1 {
				t.Fatalf("batch path %q", path)
			}
		case endpointSearch:
			if !strings.HasPrefix(path, "/v1/search?limit=20&q=") {
				t.Fatalf("search path %q", path)
			}
		}
	}
	for ep, want := range map[string]float64{endpointProduct: 0.5, endpointProducts: 0.2, endpointSearch: 0.3} {
		if got := float64(counts[ep]) / n; got < want-0.03 || got > want+0.03 {
			t.Errorf("%s: share %.3f, want %.2f", ep, got, want)
		}
	}
	// Zipf: the most popular product gets far more than a uniform share
	// (1/1000 of single reads).
	if share := float64(hot) / float64(counts[endpointProduct]); share < 0.05 {
		t.Errorf("product 1 got %.3f of single reads, want a Zipf head (>= 0.05)", share)
	}
	for _, bad := range []Mix{
		{Products: 0, ZipfS: 1.1, BatchSize: 1},
		{Products: 10, ZipfS: 1, BatchSize: 1},
		{Products: 10, ZipfS: 1.1, BatchSize: 101},
		{Products: 10, ZipfS: 1.1, BatchSize: 1, BatchPercent: 60, SearchPercent: 50},
	} {
		if err := bad.validate(); err == nil {
			t.Errorf("validate(%+v): no error", bad)
		}
	}
}

// TestBrowseOutage browses the real API while the cache's Redis is made
// unavailable for a while: reads keep answering 200, the database takes the
// load while the hit ratio drops, and the cache heals afterwards. 75
// requests/s over 100 products: a rate a busy machine still serves under
// -race (no arrival is dropped: they queue), with each product read as
// often as at 150/s over 200. The run lasts 10 s, 6 s past the outage's
// planned end: a segment begins when the API has answered the fault knob's
// call, and answers count in the segment they arrive in, so on a starved
// machine (reads at p50 1.1 s, beside the deploy tests in a CI run) a 6 s
// run ended before the "after" segment had begun.
func TestBrowseOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis, a few seconds of load")
	}
	url, _ := startTestAPI(t, testAPI{adminToken: "t"})
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{
		"-target", url, "-admin-token", "t", "-metrics-addr", "", "-rate", "75", "-max-in-flight", "1000", "-duration", "10s",
		"-products", "100", "-outage-at", "2s", "-outage-for", "2s", "-report-dir", dir, "browse",
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := runArgs(ctx, args, &stdout, &stderr)
	t.Logf("stdout:\n%s", stdout.String())
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	sum, err := readSummary[BrowseSummary](filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 0 || sum.Dropped != 0 || sum.Requests < 400 || !sum.Passed {
		t.Errorf("requests=%d errors=%d dropped=%d passed=%v: reads must keep flowing", sum.Requests, sum.Errors, sum.Dropped, sum.Passed)
	}
	for _, ep := range []string{endpointProduct, endpointProducts, endpointSearch} {
		if sum.Endpoints[ep] == nil || sum.Endpoints[ep].Requests == 0 {
			t.Errorf("no %s requests: %v", ep, sum.Endpoints)
		}
	}
	seg := map[string]SegmentSummary{}
	var names []string
	for _, g := range sum.Segments {
		seg[g.Name] = g
		names = append(names, g.Name)
	}
	if strings.Join(names, ",") != "before,outage,after" {
		t.Fatalf("segments %v, want before,outage,after", names)
	}
	checkSlowest(t, sum.Traces, "before", "outage", "after")
	before, outage, after := seg["before"], seg["outage"], seg["after"]
	t.Logf("before %+v\noutage %+v\nafter %+v", before, outage, after)
	// Database queries per request: at most about one while the cache is
	// bypassed, and clearly fewer once it is back. No lower bound during the
	// outage: concurrent reads of one key share a query, and the slower the
	// database, the longer the queue and the more they share (0.76 and 0.60
	// on loaded machines); that every read bypassed the cache is what the
	// hit ratio shows.
	perRequest := func(g SegmentSummary) float64 {
		return g.DBQueriesPerSecond * (g.ToSeconds - g.FromSeconds) / float64(g.Requests)
	}
	// The scrapes at the outage's ends wait for a slow API, so its points
	// hold only its own counters; the scrapes between them may fail on a
	// loaded machine and spread the counters over several points, so the
	// bypass shows in the lowest point.
	lowest := 1.0
	for _, p := range sum.Timeline {
		if p.Segment == "outage" && p.Gets > 0 {
			lowest = min(lowest, p.Served/p.Gets)
		}
	}
	if lowest > 0.2 || perRequest(outage) > 1.5 {
		for _, p := range sum.Timeline {
			t.Logf("point %+v", p)
		}
		t.Errorf("outage: hit ratio %.3f at its lowest point (%.3f over the segment), %.2f database queries per request: want the cache bypassed and at most one query per read",
			lowest, outage.HitRatio, perRequest(outage))
	}
	if after.HitRatio < 0.4 || perRequest(after) > 0.75*perRequest(outage) {
		t.Errorf("after: hit ratio %.3f, %.2f database queries per request (outage: %.2f): want the cache healing",
			after.HitRatio, perRequest(after), perRequest(outage))
	}
	reporttest.CheckReport(t, dir, "latency.png", "db_load.png", "hit_ratio.png")

	// replot renders the same report again from summary.json alone.
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.md", "latency.png", "db_load.png", "hit_ratio.png"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Reset()
	if err := runArgs(ctx, []string{"-report-dir", dir, "replot"}, &stdout, &stderr); err != nil {
		t.Fatalf("replot: %v", err)
	}
	reporttest.CheckReport(t, dir, "latency.png", "db_load.png", "hit_ratio.png")
	if again, _ := os.ReadFile(filepath.Join(dir, "report.md")); !bytes.Equal(again, md) {
		t.Errorf("replotted report.md differs:\n%s\n---\n%s", again, md)
	}
}

func TestReplotRefusesWhatItCannotRender(t *testing.T) {
	dir := t.TempDir()
	if err := runArgs(t.Context(), []string{"-report-dir", dir, "replot"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("replot without summary.json: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"scenario": "demo"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runArgs(t.Context(), []string{"-report-dir", dir, "replot"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "demo") {
		t.Errorf("replot of a demo summary: %v", err)
	}
}
