package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// demo is a recorded demo of 12 minutes at 5 s: steady load, a ttl burst
// at 4:00–4:40 and an xfetch burst at 8:00–8:40, as OpenMetrics text.
func demo(t0 time.Time) []byte {
	const samples = 12 * 12
	var om bytes.Buffer
	sec := func(i int) int { return 5 * i }
	in := func(i, from, to int) bool { return sec(i) >= from && sec(i) < to }
	ttl := func(i int) bool { return in(i, 240, 280) }
	xfetch := func(i int) bool { return in(i, 480, 520) }
	// counter sums a per-second rate over the samples so far.
	counter := func(perSec func(i int) float64) func(int) float64 {
		return func(i int) float64 {
			total := 0.0
			for j := 1; j <= i; j++ {
				total += 5 * perSec(j)
			}
			return total
		}
	}
	burst := func(on, off float64) func(int) float64 {
		return func(i int) float64 {
			if ttl(i) || xfetch(i) {
				return on
			}
			return off
		}
	}
	ttlOnly := func(on, off float64) func(int) float64 {
		return func(i int) float64 {
			if ttl(i) {
				return on
			}
			return off
		}
	}
	series := []struct {
		name string
		v    func(i int) float64
	}{
		{`loadgen_requests_total{scenario="stampede",endpoint="category_stats",code="200"}`, counter(burst(200, 0))},
		{`cachex_strategy_info{cache="category_stats",strategy="ttl"}`, func(i int) float64 { return b2f(in(i, 240, 480)) }},
		{`cachex_strategy_info{cache="category_stats",strategy="xfetch"}`, func(i int) float64 { return b2f(!in(i, 240, 480)) }},
		{`catalog_hottest_key_recomputes{cache="category_stats",instance="a"}`, ttlOnly(20, 1)},
		{`cachex_recomputes_total{cache="category_stats",status="ok"}`, counter(ttlOnly(1, 0.1))},
		{`cachex_recomputes_discarded_total{cache="category_stats"}`, counter(ttlOnly(0.8, 0))},
		{`catalog_db_query_duration_seconds_count{query="category_stats"}`, counter(ttlOnly(20, 2))},
		{`loadgen_request_duration_seconds_bucket{scenario="stampede",le="0.05"}`, counter(func(i int) float64 { return b2f(xfetch(i)) * 200 })},
		{`loadgen_request_duration_seconds_bucket{scenario="stampede",le="1"}`, counter(func(i int) float64 { return b2f(xfetch(i)) * 200 })},
		{`loadgen_request_duration_seconds_bucket{scenario="stampede",le="10"}`, counter(burst(200, 0))},
		{`loadgen_request_duration_seconds_bucket{scenario="stampede",le="+Inf"}`, counter(burst(200, 0))},
		{`cachex_gets_total{cache="product",result="hit"}`, counter(burst(3, 3))},
		{`cachex_gets_total{cache="product",result="miss"}`, counter(burst(1, 1))},
		{`ALERTS{alertname="StampedeRecomputeStorm",alertstate="firing"}`, func(i int) float64 { return b2f(in(i, 260, 300)) }},
	}
	for _, s := range series {
		name, _, _ := strings.Cut(s.name, "{")
		fmt.Fprintf(&om, "# TYPE %s gauge\n", name)
		for i := 0; i <= samples; i++ {
			if name == "ALERTS" && s.v(i) == 0 {
				continue // Prometheus writes ALERTS only while an alert is in a state
			}
			fmt.Fprintf(&om, "%s %g %d\n", s.name, s.v(i), t0.Unix()+int64(sec(i)))
		}
	}
	om.WriteString("# EOF\n")
	return om.Bytes()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestDemoFigures runs the command on a Prometheus holding a recorded demo
// and checks each class's cells against what the recording holds.
func TestDemoFigures(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	prom := testenv.PrometheusFrom(t, demo(t0))
	out := filepath.Join(t.TempDir(), "figures.md")
	args := []string{"-prom", prom, "-start", t0.UTC().Format(time.RFC3339),
		"-end", t0.Add(12 * time.Minute).UTC().Format(time.RFC3339), "-o", out, "-title", "A recorded demo"}
	var stdout, stderr bytes.Buffer
	if rc := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); rc != 0 {
		t.Fatalf("run: exit %d\n%s", rc, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	t.Logf("\n%s", got)
	if !strings.HasPrefix(got, "# A recorded demo\n\nWritten by `go run ./deploy/cmd/demofigures -prom "+prom) ||
		!strings.Contains(got, " -title 'A recorded demo'`.\n") {
		t.Errorf("the report does not start with its title and command line")
	}
	for _, want := range []string{
		"| | steady load | ttl bursts | xfetch bursts |",
		"| recomputes of the hottest key per TTL window, category_stats (the dashboards' panel) | 1 (1) | 20 (20) | 1 (1) |",
		"| category_stats database queries/s (1 m) | 2.0 (2.0) |",
		"| hit ratio, all caches, % (1 m) | 75.0 (75.0) | 75.0 (75.0) | 75.0 (75.0) |",
		"| alerts firing | none | StampedeRecomputeStorm | none |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	// A one-minute ratio over a 40 s burst of 1 recompute per stored value
	// 0.2: above the alert's 1.25, below 5.
	if r := rowCells(t, got, "| recomputes per stored value, category_stats (StampedeRecomputeStorm's ratio, 1 m) |"); median(t, r[1]) < 2 || median(t, r[1]) > 5 || r[0] != "1.00 (1.00)" || r[2] != "1.00 (1.00)" {
		t.Errorf("recomputes per stored value %q: want 1.00 steady and under xfetch, between 2 and 5 in the ttl burst", r)
	}
	p99 := rowCells(t, got, "| burst p99, client, ms (30 s) |")
	if p99[0] != "–" || !strings.HasPrefix(p99[1], "99") || !strings.HasPrefix(p99[2], "50") {
		t.Errorf("burst p99 cells %q: want none at steady load, 9,9xx ms in the ttl burst (le 10 s), 50 ms in the xfetch burst (le 50 ms)", p99)
	}
}

// rowCells returns the three class cells of the table row that starts with
// prefix.
func rowCells(t *testing.T, table, prefix string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			cells := strings.Split(strings.Trim(rest, " |"), " | ")
			if len(cells) == 3 {
				return cells
			}
		}
	}
	t.Fatalf("no row %q with three cells in:\n%s", prefix, table)
	return nil
}

// median is the first number of a cell.
func median(t *testing.T, cell string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.Fields(cell)[0], 64)
	if err != nil {
		t.Fatalf("cell %q: %v", cell, err)
	}
	return f
}

func TestFlags(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	env := func(k string) string {
		return map[string]string{"PROMETHEUS_URL": "http://127.0.0.1:9999"}[k]
	}
	c, err := parseFlags([]string{"-since", "20m"}, env, now, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.prom != "http://127.0.0.1:9999" || !c.end.Equal(now) || !c.start.Equal(now.Add(-20*time.Minute)) {
		t.Errorf("-since 20m with PROMETHEUS_URL set: %+v", c)
	}
	for _, bad := range [][]string{
		{"-start", "yesterday"},
		{"-start", "2026-12-01T12:00:00Z", "-end", "2026-12-01T11:00:00Z"},
		{"extra"},
	} {
		if _, err := parseFlags(bad, env, now, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestReadmeQuotesTheCommittedFigures: the demo tables of docs/running.md
// (moved there from the README's live demo) are the
// committed reports in docs/demo/ (written by this command), line for line,
// so that a figure from another run fails.
func TestReadmeQuotesTheCommittedFigures(t *testing.T) {
	readme, err := os.ReadFile("../../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	reports, err := filepath.Glob("../../../docs/demo/*.md")
	if err != nil || len(reports) == 0 {
		t.Fatalf("no reports in docs/demo/ (%v)", err)
	}
	for _, path := range reports {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		quoted := 0
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "| ") {
				continue
			}
			if !strings.Contains(string(readme), line+"\n") {
				t.Errorf("docs/running.md lacks the line of %s:\n%s", filepath.Base(path), line)
			}
			quoted++
		}
		if quoted < 7 {
			t.Errorf("%s has %d table rows; want the table demofigures writes", path, quoted)
		}
	}
}
