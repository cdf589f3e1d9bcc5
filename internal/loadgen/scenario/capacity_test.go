package scenario

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report/reporttest"
)

// TestCapacityRampRates: the steps go from the start rate, each the last
// times the factor plus the increment, up to and including the maximum.
func TestCapacityRampRates(t *testing.T) {
	for _, c := range []struct {
		p    ramp
		want []float64
	}{
		{ramp{start: 10, factor: 2, max: 80}, []float64{10, 20, 40, 80}},
		{ramp{start: 10, factor: 2, max: 79}, []float64{10, 20, 40}},
		{ramp{start: 50, factor: 1, add: 25, max: 150}, []float64{50, 75, 100, 125, 150}},
		{ramp{start: 10, factor: 1.5, add: 5, max: 50}, []float64{10, 20, 35}},
		{ramp{start: 10, factor: 3, max: 10}, []float64{10}},
		{ramp{start: 0.1, factor: 1.1, max: 0.1331}, []float64{0.1, 0.11, 0.121, 0.1331}}, // rounding at the top
	} {
		got := c.p.rates()
		if len(got) != len(c.want) {
			t.Errorf("%+v: rates %v, want %v", c.p, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-9 {
				t.Errorf("%+v: rates %v, want %v", c.p, got, c.want)
				break
			}
		}
	}
	if n := len((ramp{start: 1, factor: 1, max: 10}).rates()); n != 1 {
		t.Errorf("a ramp that does not rise: %d rates, want 1 (the check refuses its flags)", n)
	}
}

// syntheticSteps returns a step function that answers each rate with the
// p99 and error ratio given for it, and the rates it was asked for.
func syntheticSteps(p99Ms, errorRate map[float64]float64) (func(context.Context, float64) (CapacityStep, error), *[]float64) {
	var asked []float64
	return func(_ context.Context, rate float64) (CapacityStep, error) {
		asked = append(asked, rate)
		return CapacityStep{RateRPS: rate, Scheduled: 100, Requests: 100,
			Latency: loadgen.LatencySummary{Count: 100, P50Ms: p99Ms[rate] / 2, P99Ms: p99Ms[rate]}, ErrorRate: errorRate[rate]}, nil
	}, &asked
}

// TestCapacityRampStopsAtTheFirstFailure: a step whose p99 passes the SLO
// or whose error ratio passes the limit ends the ramp (no later step runs,
// even one that would pass); the capacity is the last passing step's rate,
// 0 with the reason when the first step fails, and the top rate when every
// step passes. The SLO and the limit themselves pass.
func TestCapacityRampStopsAtTheFirstFailure(t *testing.T) {
	p := ramp{start: 10, factor: 2, max: 80, sloP99Ms: 250, maxErrorRate: 0.01}
	for _, c := range []struct {
		name          string
		p99, errs     map[float64]float64
		wantAsked     []float64
		wantCapacity  float64
		wantFailedRPS float64
		wantReason    string
	}{
		{"p99 over the SLO", map[float64]float64{10: 5, 20: 250, 40: 251, 80: 5}, nil,
			[]float64{10, 20, 40}, 20, 40, "p99"},
		{"errors over the limit", map[float64]float64{10: 5, 20: 5, 40: 5, 80: 5}, map[float64]float64{20: 0.01, 40: 0.0101, 80: 0},
			[]float64{10, 20, 40}, 20, 40, "errors"},
		{"both", map[float64]float64{10: 5, 20: 900}, map[float64]float64{20: 0.5},
			[]float64{10, 20}, 10, 20, "p99, errors"},
		{"the first step fails", map[float64]float64{10: 300, 20: 5}, nil,
			[]float64{10}, 0, 10, "p99"},
		{"the first step fails on errors", nil, map[float64]float64{10: 1},
			[]float64{10}, 0, 10, "errors"},
		{"every step passes", map[float64]float64{10: 5, 20: 5, 40: 5, 80: 249}, nil,
			[]float64{10, 20, 40, 80}, 80, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			step, asked := syntheticSteps(c.p99, c.errs)
			var seen []float64
			steps, err := p.climb(t.Context(), step, func(s CapacityStep) { seen = append(seen, s.RateRPS) })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(*asked, c.wantAsked) || !slices.Equal(seen, c.wantAsked) {
				t.Errorf("steps run %v, seen %v, want %v", *asked, seen, c.wantAsked)
			}
			got := capacityOf("product", steps)
			if got.CapacityRPS != c.wantCapacity || got.FailedRPS != c.wantFailedRPS || got.Reason != c.wantReason {
				t.Errorf("capacity %v, failed at %v because %q; want %v, %v, %q", got.CapacityRPS, got.FailedRPS, got.Reason,
					c.wantCapacity, c.wantFailedRPS, c.wantReason)
			}
			at, ok := got.sustained()
			if ok != (c.wantCapacity > 0) || at.RateRPS != c.wantCapacity {
				t.Errorf("sustained step %+v (%v), want the one at %v", at, ok, c.wantCapacity)
			}
			if f, ok := got.failed(); ok != (c.wantReason != "") || f.RateRPS != c.wantFailedRPS || f.Failed != c.wantReason {
				t.Errorf("failed step %+v (%v), want the one at %v", f, ok, c.wantFailedRPS)
			}
		})
	}
}

// TestCapacityRampStopsAtAStepError: a step that could not run (the run
// was stopped) ends the ramp with its error and the steps run before it.
func TestCapacityRampStopsAtAStepError(t *testing.T) {
	p := ramp{start: 10, factor: 2, max: 80, sloP99Ms: 250, maxErrorRate: 0.01}
	calls := 0
	steps, err := p.climb(t.Context(), func(_ context.Context, rate float64) (CapacityStep, error) {
		if calls++; calls == 2 {
			return CapacityStep{}, context.Canceled
		}
		return CapacityStep{RateRPS: rate}, nil
	}, nil)
	if !errors.Is(err, context.Canceled) || len(steps) != 1 || !steps[0].Passed {
		t.Errorf("steps %+v, err %v; want the first step and context.Canceled", steps, err)
	}
}

// TestCapacityStepCounts: timeouts and dropped arrivals count as errors of
// the step, by code; latency covers every finished request.
func TestCapacityStepCounts(t *testing.T) {
	s := CapacityStep{ErrorCodes: map[string]int64{}}
	h := loadgen.NewHistogram()
	for i := range 96 {
		s.count(loadgen.Result{Outcome: loadgen.Outcome{Code: "200"}, Latency: time.Duration(i+1) * time.Millisecond}, h)
	}
	s.count(loadgen.Result{Outcome: loadgen.Outcome{Code: loadgen.CodeTimeout, Err: context.DeadlineExceeded}, Latency: 30 * time.Second}, h)
	s.count(loadgen.Result{Outcome: loadgen.Outcome{Code: "503", Err: errors.New("HTTP 503")}, Latency: time.Millisecond}, h)
	s.count(loadgen.Result{Dropped: true}, h)
	s.count(loadgen.Result{Dropped: true}, h)
	start := time.Now()
	s.finish(loadgen.Summary{Scheduled: 100, Start: start, End: start.Add(2 * time.Second)}, h)
	if s.Requests != 98 || s.Errors != 2 || s.Dropped != 2 || s.ErrorRate != 0.04 || s.AchievedRPS != 49 {
		t.Errorf("requests %d errors %d dropped %d error ratio %v achieved %v", s.Requests, s.Errors, s.Dropped, s.ErrorRate, s.AchievedRPS)
	}
	if want := map[string]int64{"timeout": 1, "503": 1, "dropped": 2}; !mapsEqual(s.ErrorCodes, want) {
		t.Errorf("error codes %v, want %v", s.ErrorCodes, want)
	}
	if s.Latency.Count != 98 || s.Latency.MaxMs < 29_000 {
		t.Errorf("latency %+v: want the 98 finished requests, the timeout's 30s included", s.Latency)
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCapacityVerdict: overload is the measurement, so a class whose
// first step failed passes; only a class without a single good answer
// (nothing measured) fails the run.
func TestCapacityVerdict(t *testing.T) {
	slow := capacityOf(endpointSearch, []CapacityStep{{RateRPS: 10, Scheduled: 10, Requests: 10, Failed: "p99"}})
	fine := capacityOf(endpointProduct, []CapacityStep{{RateRPS: 10, Scheduled: 10, Requests: 10, Passed: true}})
	s := &CapacitySummary{Verdict: Verdict{MaxErrorRate: 0.01}}
	s.add(fine)
	s.add(slow)
	if err := s.check(); err != nil || !s.Passed {
		t.Errorf("a slow class: %v (passed %v), want a pass", err, s.Passed)
	}
	dead := capacityOf(reserveEndpoint, []CapacityStep{{RateRPS: 10, Scheduled: 10, Requests: 4, Errors: 4, Dropped: 6, ErrorRate: 1, Failed: "errors"}})
	s = &CapacitySummary{Verdict: Verdict{MaxErrorRate: 0.01}}
	s.add(fine)
	s.add(dead)
	if err := s.check(); !errors.Is(err, errNotMeasured) || s.Passed || len(s.Failures) != 1 || !strings.HasPrefix(s.Failures[0], "reserve:") {
		t.Errorf("a class without answers: %v (passed %v, failures %q), want errNotMeasured naming it", err, s.Passed, s.Failures)
	}
	if s.Requests != 14 || s.Errors != 4 || s.Dropped != 6 || s.ErrorRate != 0.5 {
		t.Errorf("totals: requests %d errors %d dropped %d error ratio %v", s.Requests, s.Errors, s.Dropped, s.ErrorRate)
	}
}

// TestCapacityReport renders a synthetic run: the table gives each class's
// capacity, 0 with the reason when the first step failed, and the charts
// draw p99 and error ratio per offered rate with the marks; replot draws
// the same from summary.json.
func TestCapacityReport(t *testing.T) {
	ok := func(rate, p99 float64) CapacityStep {
		return CapacityStep{RateRPS: rate, Scheduled: 10, Requests: 10, Passed: true, Latency: loadgen.LatencySummary{Count: 10, P50Ms: p99 / 3, P99Ms: p99}}
	}
	s := &CapacitySummary{Load: Load{Scenario: "capacity", Target: "http://127.0.0.1:8080", RateRPS: 50}, StepSeconds: 10, StepFactor: 2,
		MaxRateRPS: 400, SLOP99Ms: 250, Products: 25000, ZipfS: 1.1, BatchSize: 20, HotKeys: 3, SKUs: []int64{1, 2, 3},
		Verdict: Verdict{MaxErrorRate: 0.01}}
	slowStep := ok(200, 900)
	slowStep.Passed, slowStep.Failed = false, "p99"
	errStep := ok(50, 4)
	errStep.Passed, errStep.Failed, errStep.Errors, errStep.ErrorRate, errStep.ErrorCodes = false, "errors", 5, 0.5, map[string]int64{"timeout": 5}
	s.add(capacityOf(endpointProduct, []CapacityStep{ok(50, 2), ok(100, 3), slowStep}))
	s.add(capacityOf(reserveEndpoint, []CapacityStep{errStep}))
	s.add(capacityOf(endpointSearch, []CapacityStep{ok(50, 2), ok(100, 3), ok(200, 3), ok(400, 8)}))
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := writeSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Report().Write(dir); err != nil {
		t.Fatal(err)
	}
	reporttest.CheckReport(t, dir, "capacity.png", "capacity_errors.png")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	tables := mdTables(string(md))
	if len(tables) != 2 || len(tables[0].rows) != 3 || len(tables[1].rows) != 8 {
		t.Fatalf("tables %+v, want the capacity table (3 classes) and the steps (8)", tables)
	}
	want := [][]string{
		{"product", "100", "1.00", "3.00", "0.0000", "200", "p99 900.00 ms > 250.00 ms"},
		{"reserve", "0", "-", "-", "-", "50", "error ratio 0.5000 > 0.0100 (timeout 5)"},
		{"search", "400", "2.67", "8.00", "0.0000", "-", "reached -max-rate"},
	}
	for i, row := range tables[0].rows {
		if !slices.Equal(row, want[i]) {
			t.Errorf("row %d: %q, want %q", i, row, want[i])
		}
	}
	var table bytes.Buffer
	s.WriteTable(&table)
	if !strings.Contains(table.String(), "reached -max-rate") || !strings.Contains(table.String(), "timeout 5") {
		t.Errorf("stdout table:\n%s", table.String())
	}
	if err := os.Remove(filepath.Join(dir, "report.md")); err != nil {
		t.Fatal(err)
	}
	if err := Replot(dir, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "report.md")); !bytes.Equal(again, md) {
		t.Errorf("replotted report.md differs:\n%s\n---\n%s", again, md)
	}
}

// TestCapacityFlags: bad ramp flags are refused with the flag's name;
// good ones parse.
func TestCapacityFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-classes", "product,checkout"}, "-classes"},
		{[]string{"-classes", "search,search"}, "-classes"},
		{[]string{"-classes", " , "}, "-classes"},
		{[]string{"-step-factor", "0.5"}, "-step-factor"},
		{[]string{"-step-factor", "NaN"}, "-step-factor"},
		{[]string{"-step-add", "-1"}, "-step-add"},
		{[]string{"-step-factor", "1"}, "-step-factor 1 with -step-add 0"},
		{[]string{"-step-duration", "0s"}, "-step-duration"},
		{[]string{"-ramp-warmup", "-1s"}, "-ramp-warmup"},
		{[]string{"-rate", "100", "-max-rate", "50"}, "-max-rate"},
		{[]string{"-max-rate", "+Inf"}, "-max-rate"},
		{[]string{"-slo-p99", "0s"}, "-slo-p99"},
		{[]string{"-step-factor", "1.001"}, "steps per class"},
	} {
		args := append([]string{"-target", "http://127.0.0.1:1"}, append(c.args, "capacity")...)
		if _, _, err := ParseArgs(args, noEnv, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %q", c.args, err, c.want)
		}
	}
	s, cfg, err := ParseArgs([]string{"-rate", "20", "-step-factor", "1", "-step-add", "20", "-max-rate", "100", "-classes", "search, reserve",
		"-slo-p99", "100ms", "capacity"}, noEnv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.(*Capacity)
	p := c.ramp()
	if !slices.Equal(c.classes, []string{endpointSearch, reserveEndpoint}) || !slices.Equal(p.rates(), []float64{20, 40, 60, 80, 100}) ||
		p.sloP99Ms != 100 || p.maxErrorRate != cfg.MaxErrorRate || c.stepDuration != 10*time.Second {
		t.Errorf("classes %v, rates %v, ramp %+v, step %v", c.classes, p.rates(), p, c.stepDuration)
	}
}

// TestCapacityScenario runs a small ramp of every class against the real
// API (a seeded Postgres, a private Redis): each class sustains a finite
// rate above 0, the chart is a PNG, and the reserve class leaves no hold.
func TestCapacityScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: real Postgres and Redis, a few seconds of load")
	}
	url, db := startTestAPI(t, testAPI{adminToken: "t"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{
		"-target", url, "-metrics-addr", "", "-rate", "10", "-step-factor", "2", "-max-rate", "40", "-step-duration", "500ms",
		"-ramp-warmup", "500ms", "-slo-p99", "1s", "-products", "200", "-skus", "1,2,3", "-report-dir", dir, "capacity",
	}
	start := time.Now()
	err := runArgs(ctx, args, &stdout, &stderr)
	t.Logf("%v; stdout:\n%s", time.Since(start), stdout.String())
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	sum, err := readSummary[CapacitySummary](filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Passed || len(sum.Classes) != len(capacityClasses()) {
		t.Fatalf("passed %v, %d classes, failures %q", sum.Passed, len(sum.Classes), sum.Failures)
	}
	checkSlowest(t, sum.Traces, capacityClasses()...)
	for i, c := range sum.Classes {
		if c.Class != capacityClasses()[i] {
			t.Errorf("class %d is %q, want %q", i, c.Class, capacityClasses()[i])
		}
		at, ok := c.sustained()
		if !ok || !(c.CapacityRPS > 0) || math.IsInf(c.CapacityRPS, 0) || at.Requests == 0 || at.Latency.Count != at.Requests {
			t.Errorf("%s: capacity %v (steps %+v), want a finite rate > 0 measured by a step", c.Class, c.CapacityRPS, c.Steps)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "capacity.png")); err != nil {
		t.Fatal(err)
	}
	reporttest.DecodePNG(t, filepath.Join(dir, "capacity.png"))
	reporttest.CheckReport(t, dir, "capacity.png")
	var active int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM reservations WHERE status = 'active'`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 0 {
		t.Errorf("%d reservations still held after the run, want every hold cancelled", active)
	}
}
