package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StampedeSummary is every figure of one stampede run, written as
// summary.json in the report directory. (It is not called Summary because
// that name is the Runner's per-run counts, see schedule.go.) Durations are
// in milliseconds or seconds as their field names say.
type StampedeSummary struct {
	Scenario        string         `json:"scenario"`
	Target          string         `json:"target"`
	Cache           string         `json:"cache"`
	RateRPS         float64        `json:"rate_rps"`
	PhaseSeconds    float64        `json:"phase_seconds"`
	CacheTTLSeconds float64        `json:"cache_ttl_seconds"`
	WarmupSeconds   float64        `json:"warmup_seconds"`
	HotKeys         int            `json:"hot_keys"`
	Started         time.Time      `json:"started"`
	Finished        time.Time      `json:"finished"`
	Phases          []PhaseSummary `json:"phases"`
	Requests        int64          `json:"requests"`
	Errors          int64          `json:"errors"`
	Dropped         int64          `json:"dropped"`
	ErrorRate       float64        `json:"error_rate"`
	MaxErrorRate    float64        `json:"max_error_rate"`
	Passed          bool           `json:"passed"`
	Failures        []string       `json:"failures,omitempty"`
}

// PhaseSummary is the figures of one strategy phase of a stampede run.
// Server-side figures are differences of the API's /metrics counters between
// a scrape just before and one just after the phase.
type PhaseSummary struct {
	// Name is the phase as given on the command line ("ttl", "xfetch:1").
	Name     string    `json:"name"`
	Strategy string    `json:"strategy"`
	Beta     *float64  `json:"beta,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Windows is the phase's length in cache TTLs.
	Windows float64 `json:"ttl_windows"`

	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	Dropped   int64   `json:"dropped"`
	ErrorRate float64 `json:"error_rate"` // (errors + dropped) / scheduled
	RPS       float64 `json:"achieved_rps"`

	// Recomputes is the database recomputes of the cache in the phase, all
	// reasons, status ok and error.
	Recomputes         float64            `json:"recomputes"`
	RecomputesByReason map[string]float64 `json:"recomputes_by_reason"`
	RecomputeErrors    float64            `json:"recompute_errors"`
	// RecomputesPerKeyWindow is Recomputes / (hot keys × Windows): 1 means
	// each key was recomputed once per TTL, more is a stampede.
	RecomputesPerKeyWindow float64            `json:"recomputes_per_key_per_window"`
	Gets                   float64            `json:"gets"`
	GetsByResult           map[string]float64 `json:"gets_by_result"`
	// HitRatio is (hit + early_refresh + stale) / all gets.
	HitRatio       float64 `json:"hit_ratio"`
	EarlyRefreshes float64 `json:"early_refreshes"`

	// Latency covers every request of the phase, measured from its
	// scheduled start; AfterWarmup only those scheduled after the warm-up.
	Latency     LatencySummary `json:"latency"`
	AfterWarmup LatencySummary `json:"latency_after_warmup"`

	// Timeline is the phase second by second, T counted from the phase's
	// start.
	Timeline []Point `json:"timeline"`
}

// LatencySummary is a latency distribution in milliseconds.
type LatencySummary struct {
	Count  int64   `json:"count"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p99_9_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// latencyOf summarises h.
func latencyOf(h *Histogram) LatencySummary {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return LatencySummary{
		Count:  h.Count(),
		P50Ms:  ms(h.Percentile(50)),
		P99Ms:  ms(h.Percentile(99)),
		P999Ms: ms(h.Percentile(99.9)),
		MaxMs:  ms(h.Max()),
	}
}

// WriteJSON writes s as indented JSON to dir/summary.json, creating dir.
func (s *StampedeSummary) WriteJSON(dir string) (string, error) { return writeSummary(dir, s) }

// writeReport writes a report directory: summary.json from sum, then
// report.md and the charts of rep, and lists the files on stdout.
func writeReport(dir string, sum any, rep Report, stdout io.Writer) error {
	path, err := writeSummary(dir, sum)
	if err != nil {
		return err
	}
	files, err := rep.Write(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "report: %s\n", strings.Join(append([]string{path}, files...), " "))
	return nil
}

// Report renders the run for people: the strategies side by side and the
// phases over time (latency, database recomputes, hit ratio), each phase's
// clock starting at 0 so the strategies overlay.
func (s *StampedeSummary) Report() Report {
	table := Table{
		Title: "Strategies side by side",
		Header: []string{"phase", "recomputes / key / TTL", "recomputes (miss / early / expired)", "hit ratio",
			"early refreshes", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "max after warm-up ms", "errors", "dropped"},
		Note: fmt.Sprintf("%d hot keys, TTL %gs, %.1f TTL windows per phase; warm-up %gs. "+
			"1 recompute per key per TTL window is the floor for a cache that is never stale.",
			s.HotKeys, s.CacheTTLSeconds, s.PhaseSeconds/s.CacheTTLSeconds, s.WarmupSeconds),
	}
	latency := Chart{File: "latency.png", Title: "Client latency, p99 per second (from the scheduled start)",
		XLabel: "seconds into the phase", YLabel: "ms", LogY: true}
	recomputes := Chart{File: "recomputes.png", Title: "Database recomputes of " + s.Cache + " per second",
		XLabel: "seconds into the phase", YLabel: "recomputes / s"}
	hits := Chart{File: "hit_ratio.png", Title: "Hit ratio of " + s.Cache + " per second",
		XLabel: "seconds into the phase", YLabel: "served from cache", YMin: ptr(0.0), YMax: ptr(1.0)}
	for _, p := range s.Phases {
		r := p.RecomputesByReason
		table.Rows = append(table.Rows, []string{p.Name, f2(p.RecomputesPerKeyWindow),
			fmt.Sprintf("%.0f / %.0f / %.0f", r["miss"], r["early"], r["expired"]), f3(p.HitRatio),
			fmt.Sprintf("%.0f", p.EarlyRefreshes), f2(p.Latency.P50Ms), f2(p.Latency.P99Ms), f2(p.Latency.P999Ms),
			f2(p.Latency.MaxMs), f2(p.AfterWarmup.MaxMs), fmt.Sprint(p.Errors), fmt.Sprint(p.Dropped)})
		latency.Lines = append(latency.Lines, timelineLine(p.Name, p.Timeline, func(pt Point, _ float64) float64 { return pt.P99Ms }))
		recomputes.Lines = append(recomputes.Lines, timelineLine(p.Name, p.Timeline, func(pt Point, dt float64) float64 { return pt.Recomputes / dt }))
		hits.Lines = append(hits.Lines, timelineLine(p.Name, p.Timeline, func(pt Point, _ float64) float64 { return pt.HitRatio() }))
	}
	return Report{
		Title: "Stampede: " + s.Cache + " under each strategy",
		Intro: fmt.Sprintf("%g requests/s (open model) at %d hot keys of %s on %s, %gs per phase, %s to %s.",
			s.RateRPS, s.HotKeys, s.Cache, s.Target, s.PhaseSeconds, s.Started.Format(time.RFC3339), s.Finished.Format(time.RFC3339)),
		Tables: []Table{table},
		Charts: []Chart{latency, recomputes, hits},
		Notes:  s.Failures,
	}
}

// timelineLine turns points into a chart line of y(point, seconds the point
// covers); points whose scrape failed are gaps.
func timelineLine(name string, pts []Point, y func(p Point, dt float64) float64) Line {
	l := Line{Name: name}
	prev := 0.0
	for _, p := range pts {
		v := math.NaN()
		if dt := p.T - prev; dt > 0 && !p.ScrapeFailed {
			v = y(p, dt)
		}
		prev = p.T
		l.X = append(l.X, p.T)
		l.Y = append(l.Y, v)
	}
	return l
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func ptr[T any](v T) *T   { return &v }

// ReadStampedeSummary reads a summary.json written by WriteJSON.
func ReadStampedeSummary(path string) (*StampedeSummary, error) {
	return readSummary[StampedeSummary](path)
}

// writeSummary writes v as indented JSON to dir/summary.json, creating dir,
// and returns the file's path.
func writeSummary(dir string, v any) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report dir: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write summary: %w", err)
	}
	return path, nil
}

// readSummary reads a summary.json into a T.
func readSummary[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s T
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// WriteTable prints one line per phase, strategies side by side.
func (s *StampedeSummary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-12s %9s %10s %8s %8s %9s %9s %9s %9s %7s %7s\n",
		"phase", "requests", "recomp/kw", "hit%", "early", "p50ms", "p99ms", "p99.9ms", "maxms", "errors", "dropped")
	for _, p := range s.Phases {
		fmt.Fprintf(w, "%-12s %9d %10.2f %8.1f %8.0f %9.2f %9.2f %9.2f %9.2f %7d %7d\n",
			p.Name, p.Requests, p.RecomputesPerKeyWindow, 100*p.HitRatio, p.EarlyRefreshes,
			p.Latency.P50Ms, p.Latency.P99Ms, p.Latency.P999Ms, p.Latency.MaxMs, p.Errors, p.Dropped)
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// replotCommand is the pseudo-scenario that re-renders a report.
const replotCommand = "replot"

// replot renders report.md and the charts of dir again from its
// summary.json (written by any scenario but demo), e.g. after a change to
// the report's layout. It sends no request.
func replot(dir string, stdout io.Writer) error {
	path := filepath.Join(dir, "summary.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var head struct {
		Scenario string `json:"scenario"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var rep Report
	switch head.Scenario {
	case stampedeScenario:
		rep, err = reportOf[StampedeSummary](b)
	case browseScenario:
		rep, err = reportOf[BrowseSummary](b)
	case reserveScenario:
		rep, err = reportOf[ReserveSummary](b)
	case lostLockScenario:
		rep, err = reportOf[LostLockSummary](b)
	default:
		return fmt.Errorf("%s: scenario %q has no report", path, head.Scenario)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	files, err := rep.Write(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", strings.Join(files, " "))
	return nil
}

// reportOf decodes a summary of type S and returns its Report.
func reportOf[S any, P interface {
	*S
	Report() Report
}](b []byte) (Report, error) {
	var s S
	if err := json.Unmarshal(b, &s); err != nil {
		return Report{}, err
	}
	return P(&s).Report(), nil
}
