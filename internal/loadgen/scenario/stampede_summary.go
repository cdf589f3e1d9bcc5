package scenario

import (
	"fmt"
	"io"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// StampedeSummary is every figure of one stampede run, written as
// summary.json in the report directory. (It is not called Summary because
// that name is the Runner's per-run counts, see schedule.go.) Durations are
// in milliseconds or seconds as their field names say.
type StampedeSummary struct {
	Load
	Cache           string  `json:"cache"`
	PhaseSeconds    float64 `json:"phase_seconds"`
	CacheTTLSeconds float64 `json:"cache_ttl_seconds"`
	WarmupSeconds   float64 `json:"warmup_seconds"`
	HotKeys         int     `json:"hot_keys"`
	// MaxDuplicates bounds an xfetch phase's duplicate recomputes per key
	// per TTL window (-max-duplicates).
	MaxDuplicates float64        `json:"max_duplicates_per_key_per_window"`
	Phases        []PhaseSummary `json:"phases"`
	Traces
	Verdict
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
	RecomputesPerKeyWindow float64 `json:"recomputes_per_key_per_window"`
	// Duplicates is the recomputes whose value was not stored because
	// another recompute of the key had stored one first
	// (cachex_recomputes_discarded_total): the stampede's wasted queries.
	// DuplicatesPerKeyWindow is Duplicates / (hot keys × Windows).
	Duplicates             float64            `json:"duplicate_recomputes"`
	DuplicatesPerKeyWindow float64            `json:"duplicate_recomputes_per_key_per_window"`
	Gets                   float64            `json:"gets"`
	GetsByResult           map[string]float64 `json:"gets_by_result"`
	// HitRatio is (hit + early_refresh + stale) / all gets.
	HitRatio float64 `json:"hit_ratio"`
	// EarlyRefreshes counts reads that chose an XFetch early refresh (gets
	// result early_refresh); only the read that wins the refresh lock
	// recomputes, so RecomputesByReason["early"] is at most this.
	EarlyRefreshes float64 `json:"early_refreshes"`
	// MeanLeadMs is how long before expiry the phase's early refreshes
	// started, on average (cachex_refresh_lead_seconds); 0 without any.
	MeanLeadMs float64 `json:"mean_refresh_lead_ms"`
	// ScrapeErrors counts the failed scrapes of the targets during the
	// phase; the server figures of the intervals around them are spread
	// from the next successful scrape.
	ScrapeErrors int `json:"scrape_errors"`

	// Latency covers every request of the phase, measured from its
	// scheduled start; AfterWarmup only those scheduled after the warm-up.
	Latency     loadgen.LatencySummary `json:"latency"`
	AfterWarmup loadgen.LatencySummary `json:"latency_after_warmup"`

	// Timeline is the phase second by second, T counted from the phase's
	// start.
	Timeline []loadgen.Point `json:"timeline"`

	// Verdict judges the phase by its purpose.
	Verdict PhaseVerdict `json:"verdict"`
}

// WriteJSON writes s as indented JSON to dir/summary.json, creating dir.
func (s *StampedeSummary) WriteJSON(dir string) (string, error) { return writeSummary(dir, s) }

// Report renders the run for people: the strategies side by side and the
// phases over time (latency, database recomputes, hit ratio), each phase's
// clock starting at 0 so the strategies overlay.
func (s *StampedeSummary) Report() report.Report {
	table := report.Table{
		Title: "Strategies side by side",
		Header: []string{"phase", "verdict", "recomputes / key / TTL", "duplicate recomputes / key / TTL", "recomputes (miss / early / expired)", "hit ratio",
			"reads that chose an early refresh", "mean refresh lead ms", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
			"max after warm-up ms", "errors", "dropped"},
		Note: fmt.Sprintf("%d hot keys, TTL %gs, %.1f TTL windows per phase; warm-up %gs. "+
			"1 recompute per key per TTL window is the floor for a cache that is never stale. "+
			"A read that chooses an early refresh is served the cached value; only the one that wins the key's refresh lock "+
			"recomputes (the early recomputes), the others duck out. The lead is how long before expiry those refreshes started. "+
			"A duplicate recompute is one whose value was thrown away because another recompute of the key stored one first "+
			"(cachex_recomputes_discarded_total): the stampede's wasted queries. "+
			"Verdict: a ttl or none phase is the baseline, run to show the stampede; its errors, drops and latency are figures, never a failure "+
			"(\"stampeded\": more than %.1f recomputes per key per TTL window). An xfetch phase passes when at most %g of the requests it sent failed "+
			"and its duplicate recomputes per key per TTL window are at most %g. Dropped arrivals (loadgen's -max-in-flight reached: "+
			"the machine did not keep up) are a figure of every phase, not a bound.",
			s.HotKeys, s.CacheTTLSeconds, s.PhaseSeconds/s.CacheTTLSeconds, s.WarmupSeconds, stampedeThreshold, s.MaxErrorRate, s.MaxDuplicates),
	}
	latency := report.Chart{File: "latency.png", Title: "Client latency, p99 per second (from the scheduled start)",
		XLabel: "seconds into the phase", YLabel: "ms", LogY: true}
	recomputes := report.Chart{File: "recomputes.png", Title: "Database recomputes of " + s.Cache + " per second",
		XLabel: "seconds into the phase", YLabel: "recomputes / s"}
	hits := report.Chart{File: "hit_ratio.png", Title: "Hit ratio of " + s.Cache + " per second",
		XLabel: "seconds into the phase", YLabel: "served from cache", YMin: ptr(0.0), YMax: ptr(1.0)}
	var (
		names []string
		pts   [][]loadgen.Point
	)
	for _, p := range s.Phases {
		r := p.RecomputesByReason
		table.Rows = append(table.Rows, []string{p.Name, p.Verdict.verdictCell(), f2(p.RecomputesPerKeyWindow), f2(p.DuplicatesPerKeyWindow),
			fmt.Sprintf("%.0f / %.0f / %.0f", r["miss"], r["early"], r["expired"]), f3(p.HitRatio),
			fmt.Sprintf("%.0f", p.EarlyRefreshes), fmt.Sprintf("%.0f", p.MeanLeadMs), f2(p.Latency.P50Ms), f2(p.Latency.P99Ms), f2(p.Latency.P999Ms),
			f2(p.Latency.MaxMs), f2(p.AfterWarmup.MaxMs), fmt.Sprint(p.Errors), fmt.Sprint(p.Dropped)})
		latency.Lines = append(latency.Lines, timelineLine(p.Name, p.Timeline, latencyY(func(pt loadgen.Point) float64 { return pt.P99Ms })))
		recomputes.Lines = append(recomputes.Lines, timelineLine(p.Name, p.Timeline, serverRate(func(pt loadgen.Point) float64 { return pt.Recomputes })))
		hits.Lines = append(hits.Lines, timelineLine(p.Name, p.Timeline, serverHitRatio))
		names, pts = append(names, p.Name+" "), append(pts, p.Timeline)
	}
	// The points after a phase's schedule ended are its last requests
	// finishing.
	marks := []report.Mark{{X: s.PhaseSeconds, Label: "phase ends; later points: its last requests finishing"}}
	errs := errorsChart(names, pts, "seconds into the phase")
	for _, c := range []*report.Chart{&latency, &recomputes, &hits, &errs} {
		c.Marks = marks
	}
	return s.Traces.addTo(report.Report{
		Title: "Stampede: " + s.Cache + " under each strategy",
		Intro: withConditions(fmt.Sprintf("%g requests/s (open model) at %d hot keys of %s on %s, %gs per phase, %s to %s.",
			s.RateRPS, s.HotKeys, s.Cache, s.Target, s.PhaseSeconds, s.Started.Format(time.RFC3339), s.Finished.Format(time.RFC3339)), s.Conditions, s.Machine),
		Tables: []report.Table{table},
		Charts: []report.Chart{latency, recomputes, hits, errs},
		Notes:  s.Failures,
	})
}

// ReadStampedeSummary reads a summary.json written by WriteJSON.
func ReadStampedeSummary(path string) (*StampedeSummary, error) {
	return readSummary[StampedeSummary](path)
}

// WriteTable prints one line per phase, strategies side by side.
func (s *StampedeSummary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-12s %9s %10s %9s %8s %8s %9s %9s %9s %9s %7s %7s  %s\n",
		"phase", "requests", "recomp/kw", "dup/kw", "hit%", "early", "p50ms", "p99ms", "p99.9ms", "maxms", "errors", "dropped", "verdict")
	for _, p := range s.Phases {
		fmt.Fprintf(w, "%-12s %9d %10.2f %9.2f %8.1f %8.0f %9.2f %9.2f %9.2f %9.2f %7d %7d  %s\n",
			p.Name, p.Requests, p.RecomputesPerKeyWindow, p.DuplicatesPerKeyWindow, 100*p.HitRatio, p.EarlyRefreshes,
			p.Latency.P50Ms, p.Latency.P99Ms, p.Latency.P999Ms, p.Latency.MaxMs, p.Errors, p.Dropped, p.Verdict.verdictCell())
	}
}
