package scenario

import (
	"fmt"
	"io"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// ReserveSummary is every figure of one reserve run, written as
// summary.json in the report directory.
type ReserveSummary struct {
	Load
	Seconds       float64 `json:"seconds"`
	SKUs          []int64 `json:"skus"`
	ReplayPercent float64 `json:"replay_percent"`
	PausePercent  int     `json:"pause_percent"`
	PauseMS       int     `json:"pause_ms"`

	// Created counts 201s of fresh keys; Replays 200s of replayed keys that
	// returned the original reservation; ReplayMismatches replays answered
	// with anything else (another status or another reservation).
	Created          int64 `json:"created"`
	Replays          int64 `json:"replays"`
	ReplayMismatches int64 `json:"replay_mismatches"`
	Insufficient     int64 `json:"insufficient"`
	Fenced           int64 `json:"fenced"`
	Busy             int64 `json:"busy"`
	// Errors are transport failures and unexpected statuses. Unknown counts
	// the fresh reservations among them, which may or may not have been
	// made; after the load each is sent again with its idempotency key:
	// ReconciledCreated were made (counted in Created), ReconciledNotCreated
	// refused, Unresolved never settled (the run fails).
	Errors               int64                  `json:"errors"`
	Unknown              int64                  `json:"unknown_outcomes"`
	ReconciledCreated    int64                  `json:"reconciled_created"`
	ReconciledNotCreated int64                  `json:"reconciled_not_created"`
	Unresolved           int64                  `json:"unresolved"`
	ByCode               map[string]int64       `json:"by_code"`
	RPS                  float64                `json:"achieved_rps"`
	Latency              loadgen.LatencySummary `json:"latency"`

	// Server is deltas of the API's counters over the run (summed over the
	// replicas): catalog_reservations_total by result and the inventory
	// lock's acquisitions and losses.
	Server map[string]float64 `json:"server"`
	// Timeline is the run second by second.
	Timeline []loadgen.Point `json:"timeline"`

	Invariant InvariantSummary `json:"invariant"`
	Traces
	Verdict
}

// InvariantSummary is the end-of-run oversell check: per SKU, the
// inventory before and after and what the run created.
type InvariantSummary struct {
	Passed     bool           `json:"passed"`
	Violations []string       `json:"violations,omitempty"`
	SKUs       []SKUInvariant `json:"skus"`
}

// SKUInvariant is the figures of one product in the invariant check.
type SKUInvariant struct {
	ProductID      int64 `json:"product_id"`
	Stock          int   `json:"stock"`
	ReservedBefore int   `json:"reserved_before"`
	ReservedAfter  int   `json:"reserved_after"`
	// CreatedQuantity is the summed quantity of the run's 201s.
	CreatedQuantity int `json:"created_quantity"`
	// CreatedReservations is the number of the run's 201s.
	CreatedReservations int `json:"created_reservations"`
}

// WriteJSON writes s as indented JSON to dir/summary.json, creating dir.
func (s *ReserveSummary) WriteJSON(dir string) (string, error) { return writeSummary(dir, s) }

// ReadReserveSummary reads a summary.json written by ReserveSummary.WriteJSON.
func ReadReserveSummary(path string) (*ReserveSummary, error) {
	return readSummary[ReserveSummary](path)
}

// WriteTable prints the result counts and one line per SKU.
func (s *ReserveSummary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "requests %d: created %d, replays %d (mismatched %d), insufficient %d, fenced %d, busy %d, errors %d, dropped %d; p50 %.2fms p99 %.2fms max %.2fms\n",
		s.Requests, s.Created, s.Replays, s.ReplayMismatches, s.Insufficient, s.Fenced, s.Busy, s.Errors, s.Dropped,
		s.Latency.P50Ms, s.Latency.P99Ms, s.Latency.MaxMs)
	fmt.Fprintf(w, "%-10s %8s %10s %10s %10s %8s\n", "product", "stock", "res.before", "res.after", "created", "ok")
	for _, k := range s.Invariant.SKUs {
		ok := k.ReservedAfter <= k.Stock && k.ReservedAfter == k.ReservedBefore+k.CreatedQuantity
		fmt.Fprintf(w, "%-10d %8d %10d %10d %10d %8v\n", k.ProductID, k.Stock, k.ReservedBefore, k.ReservedAfter, k.CreatedQuantity, ok)
	}
	for _, v := range s.Invariant.Violations {
		fmt.Fprintln(w, "VIOLATION:", v)
	}
}

// Report renders the run: outcomes, the invariant per SKU, and the answers
// and latency second by second.
func (s *ReserveSummary) Report() report.Report {
	outcomes := report.Table{Title: "Outcomes",
		Header: []string{"requests", "created", "replays ok", "replay mismatches", "insufficient", "fenced", "busy", "errors",
			"unknown outcomes (made / not made / unresolved)", "dropped", "p50 ms", "p99 ms", "max ms"},
		Rows: [][]string{{fmt.Sprint(s.Requests), fmt.Sprint(s.Created), fmt.Sprint(s.Replays), fmt.Sprint(s.ReplayMismatches),
			fmt.Sprint(s.Insufficient), fmt.Sprint(s.Fenced), fmt.Sprint(s.Busy), fmt.Sprint(s.Errors),
			fmt.Sprintf("%d (%d / %d / %d)", s.Unknown, s.ReconciledCreated, s.ReconciledNotCreated, s.Unresolved),
			fmt.Sprint(s.Dropped), f2(s.Latency.P50Ms), f2(s.Latency.P99Ms), f2(s.Latency.MaxMs)}},
		Note: "A reservation whose answer was lost (a transport error, a timeout, 500 or 503 unavailable) may or may not " +
			"have been made; after the load it is sent again with its idempotency key, and counted created if the API " +
			"returns it.",
	}
	server := report.Table{Title: "What the API counted", Header: []string{"counter", "delta"},
		Note: "Differences of the API's /metrics between the start and the end of the run, summed over the replicas."}
	for _, k := range sortedKeys(s.Server) {
		server.Rows = append(server.Rows, []string{k, fmt.Sprintf("%.0f", s.Server[k])})
	}
	inv := report.Table{Title: "No-oversell invariant", Header: []string{"product", "stock", "reserved before", "reserved after", "created quantity", "created reservations", "holds"},
		Note: "Holds when reserved after <= stock and reserved after = reserved before + the quantities the run's 201s created."}
	for _, k := range s.Invariant.SKUs {
		ok := k.ReservedAfter <= k.Stock && k.ReservedAfter == k.ReservedBefore+k.CreatedQuantity
		inv.Rows = append(inv.Rows, []string{fmt.Sprint(k.ProductID), fmt.Sprint(k.Stock), fmt.Sprint(k.ReservedBefore),
			fmt.Sprint(k.ReservedAfter), fmt.Sprint(k.CreatedQuantity), fmt.Sprint(k.CreatedReservations), map[bool]string{true: "yes", false: "NO"}[ok]})
	}
	answers := report.Chart{File: "answers.png", Title: "Answers per second", XLabel: "seconds", YLabel: "answers / s"}
	for _, class := range []string{classCreated, classReplayed, classInsufficient, classFenced, classBusy} {
		answers.Lines = append(answers.Lines, timelineLine(class, s.Timeline, clientRate(func(p loadgen.Point) float64 { return float64(p.Codes[class]) })))
	}
	latency := report.Chart{File: "latency.png", Title: "Reservation latency per second (from the scheduled start)", XLabel: "seconds", YLabel: "ms", LogY: true,
		Lines: []report.Line{
			timelineLine("p50", s.Timeline, latencyY(func(p loadgen.Point) float64 { return p.P50Ms })),
			timelineLine("p99", s.Timeline, latencyY(func(p loadgen.Point) float64 { return p.P99Ms })),
			timelineLine("max", s.Timeline, latencyY(func(p loadgen.Point) float64 { return p.MaxMs })),
		}}
	intro := fmt.Sprintf("%g reservations/s (open model) on products %v of %s for %gs, %g%% replays of earlier idempotency keys.",
		s.RateRPS, s.SKUs, s.Target, s.Seconds, s.ReplayPercent)
	if s.PausePercent > 0 {
		intro += fmt.Sprintf(" Lost-lock knob on: %d%% of reservations pause %d ms inside the lock.", s.PausePercent, s.PauseMS)
	}
	return s.Traces.addTo(report.Report{Title: "Reserve: contention on a few SKUs", Intro: withConditions(intro, s.Conditions, s.Machine),
		Tables: []report.Table{outcomes, inv, server}, Charts: []report.Chart{answers, latency, errorsChart([]string{""}, [][]loadgen.Point{s.Timeline}, "seconds")},
		Notes: s.Failures})
}
