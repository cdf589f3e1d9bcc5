package scenario

import (
	"fmt"
	"io"

	"github.com/stampede-lab/stampede/internal/loadgen"

	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// BrowseSummary is every figure of one browse run, written as summary.json.
type BrowseSummary struct {
	Load
	Seconds          float64 `json:"seconds"`
	Products         int     `json:"products"`
	ZipfS            float64 `json:"zipf_s"`
	BatchPercent     float64 `json:"batch_percent"`
	SearchPercent    float64 `json:"search_percent"`
	BatchSize        int     `json:"batch_size"`
	OutageAtSeconds  float64 `json:"outage_at_seconds,omitempty"`
	OutageForSeconds float64 `json:"outage_for_seconds,omitempty"`

	RPS       float64                     `json:"achieved_rps"`
	Endpoints map[string]*EndpointSummary `json:"endpoints"`
	// Segments split the run at the outage's start and end ("before",
	// "outage", "after"), or hold one "steady" segment without an outage.
	Segments []SegmentSummary `json:"segments"`
	Timeline []loadgen.Point  `json:"timeline"`

	Traces
	Verdict
}

// EndpointSummary is the client's view of one endpoint.
type EndpointSummary struct {
	Requests int64                  `json:"requests"`
	Errors   int64                  `json:"errors"`
	Latency  loadgen.LatencySummary `json:"latency"`
}

// SegmentSummary is one part of a run, from its timeline points: client
// latency and errors, and the server's cache and database work per second.
type SegmentSummary struct {
	Name                string                 `json:"name"`
	FromSeconds         float64                `json:"from_seconds"`
	ToSeconds           float64                `json:"to_seconds"`
	Requests            int64                  `json:"requests"`
	Errors              int64                  `json:"errors"`
	Latency             loadgen.LatencySummary `json:"latency"`
	HitRatio            float64                `json:"hit_ratio"`
	DBQueriesPerSecond  float64                `json:"db_queries_per_second"`
	RecomputesPerSecond float64                `json:"recomputes_per_second"`
}

// count adds a Runner result; the caller serialises calls.
func (s *BrowseSummary) count(res loadgen.Result, hists map[string]*loadgen.Histogram) {
	if res.Dropped {
		s.Dropped++
		return
	}
	s.Requests++
	ep := s.Endpoints[res.Endpoint]
	if ep == nil {
		ep = &EndpointSummary{}
		s.Endpoints[res.Endpoint] = ep
		hists[res.Endpoint] = loadgen.NewHistogram()
	}
	ep.Requests++
	if res.Err != nil {
		s.Errors++
		ep.Errors++
	}
	hists[res.Endpoint].Record(res.Latency)
}

// finish computes the run's rates, latencies and segments.
func (s *BrowseSummary) finish(rs loadgen.Summary, hists map[string]*loadgen.Histogram, tl *loadgen.Timeline) {
	s.Load.finish()
	if el := rs.End.Sub(rs.Start); el > 0 {
		s.RPS = float64(s.Requests) / el.Seconds()
	}
	if rs.Scheduled > 0 {
		s.ErrorRate = float64(s.Errors+s.Dropped) / float64(rs.Scheduled)
	}
	for name, ep := range s.Endpoints {
		ep.Latency = loadgen.LatencyOf(hists[name])
	}
	s.Timeline = tl.Points()
	s.Segments = segmentsOf(s.Timeline, tl.SegmentLatency)
}

// segmentsOf groups consecutive points of the same segment.
func segmentsOf(pts []loadgen.Point, latency func(string) loadgen.LatencySummary) []SegmentSummary {
	var out []SegmentSummary
	var gets, served, db, rec float64
	prevT := 0.0
	flush := func() {
		seg := &out[len(out)-1]
		if gets > 0 {
			seg.HitRatio = served / gets
		}
		if d := seg.ToSeconds - seg.FromSeconds; d > 0 {
			seg.DBQueriesPerSecond, seg.RecomputesPerSecond = db/d, rec/d
		}
		seg.Latency = latency(seg.Name)
		gets, served, db, rec = 0, 0, 0, 0
	}
	for _, p := range pts {
		if len(out) == 0 || out[len(out)-1].Name != p.Segment {
			if len(out) > 0 {
				flush()
			}
			out = append(out, SegmentSummary{Name: p.Segment, FromSeconds: prevT})
		}
		seg := &out[len(out)-1]
		seg.ToSeconds = p.T
		seg.Requests += p.Requests
		seg.Errors += p.Errors
		gets, served, db, rec = gets+p.Gets, served+p.Served, db+p.DBQueries, rec+p.Recomputes
		prevT = p.T
	}
	if len(out) > 0 {
		flush()
	}
	return out
}

// WriteTable prints one line per endpoint and per segment.
func (s *BrowseSummary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-16s %9s %7s %9s %9s %9s\n", "endpoint", "requests", "errors", "p50ms", "p99ms", "maxms")
	for _, name := range sortedKeys(s.Endpoints) {
		ep := s.Endpoints[name]
		fmt.Fprintf(w, "%-16s %9d %7d %9.2f %9.2f %9.2f\n", name, ep.Requests, ep.Errors, ep.Latency.P50Ms, ep.Latency.P99Ms, ep.Latency.MaxMs)
	}
	fmt.Fprintf(w, "%-16s %9s %7s %9s %9s %9s\n", "segment", "requests", "errors", "hit%", "db q/s", "p99ms")
	for _, g := range s.Segments {
		fmt.Fprintf(w, "%-16s %9d %7d %9.1f %9.1f %9.2f\n", g.Name, g.Requests, g.Errors, 100*g.HitRatio, g.DBQueriesPerSecond, g.Latency.P99Ms)
	}
}

// Report renders the run: endpoints, segments, and latency, database load
// and hit ratio over time with the outage shaded.
func (s *BrowseSummary) Report() report.Report {
	eps := report.Table{Title: "Endpoints", Header: []string{"endpoint", "requests", "errors", "p50 ms", "p99 ms", "p99.9 ms", "max ms"}}
	for _, name := range sortedKeys(s.Endpoints) {
		ep := s.Endpoints[name]
		eps.Rows = append(eps.Rows, []string{name, fmt.Sprint(ep.Requests), fmt.Sprint(ep.Errors),
			f2(ep.Latency.P50Ms), f2(ep.Latency.P99Ms), f2(ep.Latency.P999Ms), f2(ep.Latency.MaxMs)})
	}
	segs := report.Table{Title: "Segments", Header: []string{"segment", "seconds", "requests", "errors", "hit ratio", "DB queries / s", "recomputes / s", "p50 ms", "p99 ms", "max ms"},
		Note: "Hit ratio, database queries and recomputes are deltas of the API's /metrics, summed over the replicas, all caches."}
	for _, g := range s.Segments {
		segs.Rows = append(segs.Rows, []string{g.Name, fmt.Sprintf("%.0f–%.0f", g.FromSeconds, g.ToSeconds), fmt.Sprint(g.Requests), fmt.Sprint(g.Errors),
			f3(g.HitRatio), fmt.Sprintf("%.1f", g.DBQueriesPerSecond), fmt.Sprintf("%.1f", g.RecomputesPerSecond),
			f2(g.Latency.P50Ms), f2(g.Latency.P99Ms), f2(g.Latency.MaxMs)})
	}
	var shade []report.Span
	if s.OutageForSeconds > 0 {
		shade = []report.Span{{From: s.OutageAtSeconds, To: s.OutageAtSeconds + s.OutageForSeconds, Label: "cache Redis down"}}
	}
	latency := report.Chart{File: "latency.png", Title: "Client latency per second (from the scheduled start)", XLabel: "seconds", YLabel: "ms", LogY: true, Shade: shade,
		Lines: []report.Line{
			timelineLine("p50", s.Timeline, latencyY(func(p loadgen.Point) float64 { return p.P50Ms })),
			timelineLine("p99", s.Timeline, latencyY(func(p loadgen.Point) float64 { return p.P99Ms })),
		}}
	db := report.Chart{File: "db_load.png", Title: "Database work per second", XLabel: "seconds", YLabel: "per second", Shade: shade,
		Lines: []report.Line{
			timelineLine("database queries", s.Timeline, serverRate(func(p loadgen.Point) float64 { return p.DBQueries })),
			timelineLine("cache recomputes", s.Timeline, serverRate(func(p loadgen.Point) float64 { return p.Recomputes })),
		}}
	hits := report.Chart{File: "hit_ratio.png", Title: "Hit ratio per second, all caches", XLabel: "seconds", YLabel: "served from cache",
		YMin: ptr(0.0), YMax: ptr(1.0), Shade: shade,
		Lines: []report.Line{timelineLine("hit ratio", s.Timeline, serverHitRatio)}}
	errs := errorsChart([]string{""}, [][]loadgen.Point{s.Timeline}, "seconds")
	errs.Shade = shade
	intro := fmt.Sprintf("%g requests/s (open model) on %s for %gs: Zipf(s=%g) over %d products, %g%% batch reads of %d, %g%% searches.",
		s.RateRPS, s.Target, s.Seconds, s.ZipfS, s.Products, s.BatchPercent, s.BatchSize, s.SearchPercent)
	if s.OutageForSeconds > 0 {
		intro += fmt.Sprintf(" The cache's Redis was unavailable (fault knob cache_redis_down_percent=100) from %gs to %gs.",
			s.OutageAtSeconds, s.OutageAtSeconds+s.OutageForSeconds)
	}
	return s.Traces.addTo(report.Report{Title: "Browse", Intro: withConditions(intro, s.Conditions, s.Machine), Tables: []report.Table{eps, segs}, Charts: []report.Chart{latency, db, hits, errs}, Notes: s.Failures})
}
