package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
