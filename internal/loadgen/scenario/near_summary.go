package scenario

import (
	"fmt"
	"io"
	"strings"

	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// NearSummary is every figure of one near run, written as summary.json: the
// stampede summary of its phases ("off ttl", "on xfetch:1", ...) and, per
// phase, what the cache Redis and the near cache did.
type NearSummary struct {
	StampedeSummary
	Redis []NearPhase `json:"redis"`
}

// NearPhase is the cache Redis's and the near cache's part of one phase.
// RedisCommands is the difference of the server's total_commands_processed
// between just before and just after the phase: every client's commands.
type NearPhase struct {
	Name                    string  `json:"name"`
	RedisCommands           float64 `json:"redis_commands"`
	RedisCommandsPerSecond  float64 `json:"redis_commands_per_second"`
	RedisCommandsPerRequest float64 `json:"redis_commands_per_request"`
	// NearHits is the phase's increase of cachex_near_hits_total on the
	// target (0 with the near cache off); NearHitShare is NearHits over
	// the category_stats reads (cachex_gets_total).
	NearHits     float64 `json:"near_hits"`
	NearHitShare float64 `json:"near_hit_share"`
}

// WriteJSON writes s as indented JSON to dir/summary.json, creating dir.
func (s *NearSummary) WriteJSON(dir string) (string, error) { return writeSummary(dir, s) }

// ReadNearSummary reads a summary.json written by WriteJSON.
func ReadNearSummary(path string) (*NearSummary, error) { return readSummary[NearSummary](path) }

// Report is the stampede report of the phases with a first table, the
// sides compared: requests, latency, and what each read cost the cache
// Redis.
func (s *NearSummary) Report() report.Report {
	rep := s.StampedeSummary.Report()
	rep.Title = "Near cache off and on: " + s.Cache + " under each strategy"
	table := report.Table{
		Title: "Near cache off and on",
		Header: []string{"phase", "requests", "achieved rps", "p50 ms", "p99 ms", "Redis commands / s",
			"Redis commands / request", "near hits", "near hit share", "recomputes / key / TTL"},
		Note: "Redis commands are the cache Redis's own count (INFO total_commands_processed) between just before and just " +
			"after each phase, from every client: both APIs, loadgen's two INFO calls, and the near cache's tracking. " +
			"A near hit is a read served from the API's memory (cachex_near_hits_total); its share is of the phase's " +
			s.Cache + " reads (cachex_gets_total).",
	}
	for i, p := range s.Phases {
		var r NearPhase
		if i < len(s.Redis) {
			r = s.Redis[i]
		}
		table.Rows = append(table.Rows, []string{p.Name, fmt.Sprint(p.Requests), f2(p.RPS), f2(p.Latency.P50Ms), f2(p.Latency.P99Ms),
			fmt.Sprintf("%.0f", r.RedisCommandsPerSecond), f2(r.RedisCommandsPerRequest), fmt.Sprintf("%.0f", r.NearHits),
			f3(r.NearHitShare), f2(p.RecomputesPerKeyWindow)})
	}
	rep.Tables = append([]report.Table{table}, rep.Tables...)
	rep.Charts = append([]report.Chart{s.commandsChart()}, rep.Charts...)
	return rep
}

// commandsChart draws the first table's headline figure: the cache Redis's
// commands per request of each phase, a bar per phase, coloured by side.
func (s *NearSummary) commandsChart() report.Chart {
	c := report.Chart{File: "redis_commands.png", Title: "Cache Redis commands per request, per phase",
		XLabel: "phase (near cache off / on, strategy)", YLabel: "Redis commands / request", YMin: ptr(0.0)}
	for _, r := range s.Redis {
		side, _, _ := strings.Cut(r.Name, " ")
		group := "near cache " + side
		if side != "off" && side != "on" {
			group = ""
		}
		c.Bars = append(c.Bars, report.Bar{Label: r.Name, Text: f2(r.RedisCommandsPerRequest), Group: group, Value: r.RedisCommandsPerRequest})
	}
	return c
}

// WriteTable prints the stampede table, then one line per phase of the
// Redis commands and near hits.
func (s *NearSummary) WriteTable(w io.Writer) {
	s.StampedeSummary.WriteTable(w)
	fmt.Fprintf(w, "%-16s %12s %12s %12s %10s\n", "phase", "redis cmd/s", "cmd/request", "near hits", "near share")
	for _, r := range s.Redis {
		fmt.Fprintf(w, "%-16s %12.0f %12.2f %12.0f %10.3f\n", r.Name, r.RedisCommandsPerSecond, r.RedisCommandsPerRequest, r.NearHits, r.NearHitShare)
	}
}
