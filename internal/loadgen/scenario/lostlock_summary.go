package scenario

import (
	"fmt"

	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// LostLockSummary is every figure of a lostlock run, written as
// summary.json.
type LostLockSummary struct {
	Scenario string `json:"scenario"`
	Target   string `json:"target"`
	Stock    int    `json:"stock"`
	// Conditions is Load.Conditions.
	Conditions string `json:"conditions,omitempty"`
	// Machine is what loadgen read of the machine over the whole run
	// (each mode's Reserve has its own).
	Machine *Machine `json:"machine,omitempty"`
	// Modes are the reserve runs, one per mode, in the order run.
	Modes []ModeRun `json:"modes"`
	Traces
	Verdict
}

// ModeRun is the reserve run of one mode, with the oversold units read
// from the inventories (reserved beyond stock, summed over the products)
// every second and at the end.
type ModeRun struct {
	Mode     string          `json:"mode"`
	Reserve  *ReserveSummary `json:"reserve"`
	Oversold int             `json:"oversold"`
	// Drift is the warehouse's free units minus what is really free
	// (stock - reserved), summed: units it would sell again. Lost writes
	// make it non-zero.
	Drift int `json:"drift"`
	// OversoldAt is the oversold units read about once a second: seconds
	// since the run's start and units.
	OversoldAt [][2]float64 `json:"oversold_at"`
}

// Report renders the modes side by side and the oversold units over time.
func (s *LostLockSummary) Report() report.Report {
	table := report.Table{Title: "Oversold units per mode",
		Header: []string{"mode", "requests", "created", "insufficient", "fenced", "busy (503)", "errors", "locks lost", "oversold units", "warehouse drift", "p99 ms"},
		Note: "Oversold units: reserved beyond stock, summed over the products, read through the API after the run " +
			"(reserved is the sum of the active holds). Warehouse drift: the warehouse's free units minus stock - reserved: " +
			"units lost writes left it believing free."}
	chart := report.Chart{File: "oversold.png", Title: "Oversold units over time, per mode", XLabel: "seconds", YLabel: "units oversold"}
	intro := ""
	for _, m := range s.Modes {
		r := m.Reserve
		table.Rows = append(table.Rows, []string{m.Mode, fmt.Sprint(r.Requests), fmt.Sprint(r.Created), fmt.Sprint(r.Insufficient),
			fmt.Sprint(r.Fenced), fmt.Sprint(r.Busy), fmt.Sprint(r.Errors), fmt.Sprintf("%.0f", r.Server["inventory locks lost"]),
			fmt.Sprint(m.Oversold), fmt.Sprintf("%+d", m.Drift), f2(r.Latency.P99Ms)})
		l := report.Line{Name: m.Mode}
		for _, p := range m.OversoldAt {
			l.X, l.Y = append(l.X, p[0]), append(l.Y, p[1])
		}
		chart.Lines = append(chart.Lines, l)
		if intro == "" {
			intro = fmt.Sprintf("Each mode: %g reservations/s for %gs on products %v of %s, each with %d free units at the start; "+
				"%d%% of reservations pause %d ms between their warehouse read and write.",
				r.RateRPS, r.Seconds, r.SKUs, s.Target, s.Stock, r.PausePercent, r.PauseMS)
		}
	}
	return s.Traces.addTo(report.Report{Title: "Lost locks: oversold units per reservation mode", Intro: withConditions(intro, s.Conditions, s.Machine),
		Tables: []report.Table{table}, Charts: []report.Chart{chart}, Notes: s.Failures})
}
