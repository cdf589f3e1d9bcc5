package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// queries is one target's scrape with catalog_db_query_duration_seconds_count at n.
func queries(t *testing.T, n float64) ScrapeResult {
	t.Helper()
	s, err := scrape.Parse(strings.NewReader(fmt.Sprintf("catalog_db_query_duration_seconds_count %g\n", n)))
	if err != nil {
		t.Fatal(err)
	}
	return ScrapeResult{Samples: s}
}

var errScrape = errors.New("scrape failed")

// newTestTimeline is a timeline over n targets that is closed by hand
// (closeAt) instead of by Run's ticker.
func newTestTimeline(n int) *Timeline {
	return NewTimeline(make(Targets, n), nil, time.Second)
}

func dbQueries(pts []Point) []float64 {
	var out []float64
	for _, p := range pts {
		out = append(out, math.Round(p.DBQueries*1000)/1000)
	}
	return out
}

// TestTimelineCountsAResetFromZero: a replica restart resets its counters;
// the drop is not a negative rate and the run's total is what was counted.
func TestTimelineCountsAResetFromZero(t *testing.T) {
	tl := newTestTimeline(2)
	tl.observe(0, []ScrapeResult{queries(t, 1000), queries(t, 1477)})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 1030), queries(t, 1500)})
	tl.closeAt(2, false, []ScrapeResult{queries(t, 1060), queries(t, 20)}) // the second replica restarted
	tl.closeAt(3, false, []ScrapeResult{queries(t, 1090), queries(t, 50)})
	tl.finish()
	if got, want := fmt.Sprint(dbQueries(tl.Points())), "[53 50 60]"; got != want {
		t.Errorf("database queries per point = %s, want %s", got, want)
	}
	if got := tl.Increase().Sum("catalog_db_query_duration_seconds_count", nil); got != 163 {
		t.Errorf("run total = %v, want 163", got)
	}
}

// TestTimelineSpreadsAGapOverItsIntervals: after a failed scrape the next
// one's increase covers two intervals; it is spread over both, so neither
// shows a doubled rate, and the totals stay exact.
func TestTimelineSpreadsAGapOverItsIntervals(t *testing.T) {
	tl := newTestTimeline(1)
	tl.observe(0, []ScrapeResult{queries(t, 0)})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 100)})
	tl.closeAt(2, false, []ScrapeResult{{Err: errScrape}})
	tl.closeAt(3.5, false, []ScrapeResult{queries(t, 350)})
	tl.finish()
	pts := tl.Points()
	if got, want := fmt.Sprint(dbQueries(pts)), "[100 100 150]"; got != want {
		t.Errorf("database queries per point = %s, want %s (100/s throughout)", got, want)
	}
	if pts[1].ScrapeErrors != 1 || pts[0].ScrapeErrors != 0 || pts[1].ScrapeFailed {
		t.Errorf("scrape errors %d %d, failed %v: want the failure counted and the point filled in", pts[0].ScrapeErrors, pts[1].ScrapeErrors, pts[1].ScrapeFailed)
	}
}

// TestTimelineMarksWhatNeverArrived: a target that never answers again
// leaves its points incomplete, and a target never scraped at all makes
// every point incomplete.
func TestTimelineMarksWhatNeverArrived(t *testing.T) {
	tl := newTestTimeline(2)
	tl.observe(0, []ScrapeResult{queries(t, 0), {Err: errScrape}})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 10), {Err: errScrape}})
	tl.finish()
	if !tl.Points()[0].ScrapeFailed {
		t.Error("a point without the second target's figures is not marked")
	}
	tl = newTestTimeline(1)
	tl.observe(0, []ScrapeResult{queries(t, 0)})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 10)})
	tl.closeAt(2, false, []ScrapeResult{{Err: errScrape}})
	tl.finish()
	if pts := tl.Points(); pts[0].ScrapeFailed || !pts[1].ScrapeFailed {
		t.Errorf("failed = %v %v, want only the second point incomplete", pts[0].ScrapeFailed, pts[1].ScrapeFailed)
	}
}

// TestTimelineCutsNoSliver: a segment change just after a tick extends the
// last point instead of closing a 6 ms one whose rate would be a spike.
func TestTimelineCutsNoSliver(t *testing.T) {
	tl := newTestTimeline(1)
	tl.segment = "before"
	tl.observe(0, []ScrapeResult{queries(t, 0)})
	tl.Record(Result{Outcome: Outcome{Code: "200"}, Latency: 10 * time.Millisecond})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 100)})
	tl.Record(Result{Outcome: Outcome{Code: "200"}, Latency: 300 * time.Millisecond})
	tl.closeAt(1.006, true, []ScrapeResult{queries(t, 102)})
	tl.segment = "outage"
	tl.closeAt(2.006, false, []ScrapeResult{queries(t, 200)})
	pts := tl.Points()
	if len(pts) != 2 || pts[0].Segment != "before" || pts[0].T != 1.006 || pts[1].Segment != "outage" {
		t.Fatalf("points = %+v, want one before (to 1.006) and one outage", pts)
	}
	if pts[0].Requests != 2 || pts[0].DBQueries != 102 || pts[0].MaxMs < 299 {
		t.Errorf("merged point = %+v, want both requests, 102 queries and the 300 ms maximum", pts[0])
	}
	// A cut well into an interval still closes it.
	tl.closeAt(2.6, true, []ScrapeResult{queries(t, 260)})
	if n := len(tl.Points()); n != 3 {
		t.Errorf("%d points after a cut half an interval in, want 3", n)
	}
}

// TestTimelineScrapesAHungTargetWithAShortTimeout: one target that never
// answers costs the scrape half an interval, not the client's timeout,
// and the other target's figures still arrive.
func TestTimelineScrapesAHungTargetWithAShortTimeout(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "catalog_db_query_duration_seconds_count 7")
	}))
	defer ok.Close()
	var urls []*url.URL
	for _, s := range []string{hung.URL, ok.URL} {
		u, _ := url.Parse(s)
		urls = append(urls, u)
	}
	ts, err := NewTargets(urls, time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.CloseIdleConnections()
	tl := NewTimeline(ts, nil, 200*time.Millisecond)
	res := tl.scrape(t.Context(), tl.tickScrapeTimeout())
	if !errors.Is(res[0].Err, context.DeadlineExceeded) {
		t.Errorf("hung target: %v, want the scrape's own deadline", res[0].Err)
	}
	if res[1].Err != nil || res[1].Samples.Sum("catalog_db_query_duration_seconds_count", nil) != 7 {
		t.Errorf("healthy target: %v %v", res[1].Err, res[1].Samples)
	}
}

// TestTimelineWaitsForASlowTargetAtASegmentsEnds: a target slower than a
// tick's timeout still gives each segment exactly its own counters, because
// the scrapes at a segment's ends (baseline, cut, the run's end) wait for
// it; the ticks' scrapes between them fail and are filled in by spreading.
func TestTimelineWaitsForASlowTargetAtASegmentsEnds(t *testing.T) {
	var count atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // a tick's scrapes give up after 100 ms
		fmt.Fprintf(w, "catalog_db_query_duration_seconds_count %d\n", count.Load())
	}))
	defer slow.Close()
	u, _ := url.Parse(slow.URL)
	ts, err := NewTargets([]*url.URL{u}, time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.CloseIdleConnections()
	tl := NewTimeline(ts, nil, 200*time.Millisecond)
	tl.SetSegment("before")
	tl.Start(t.Context())
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); tl.Run(ctx) }()
	for len(tl.Points()) == 0 { // Run has begun: a tick closed a point
		time.Sleep(10 * time.Millisecond)
	}
	count.Store(100)
	tl.SetSegment("outage")
	count.Store(150)
	stop()
	<-done
	perSegment := map[string]float64{}
	for _, p := range tl.Points() {
		perSegment[p.Segment] += p.DBQueries
	}
	if math.Round(perSegment["before"]) != 100 || math.Round(perSegment["outage"]) != 50 {
		t.Errorf("database queries per segment = %v, want before 100 and outage 50 (points %+v)", perSegment, tl.Points())
	}
}

// TestTimelineKeepsShortSegmentsApart: a segment that lasts less than half
// a tick still gets its own point (a cut closes the interval before the
// segment changes, as Run does); only a sliver of the same segment merges.
func TestTimelineKeepsShortSegmentsApart(t *testing.T) {
	tl := newTestTimeline(1)
	tl.segment = "before"
	tl.observe(0, []ScrapeResult{queries(t, 0)})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 100)})
	tl.closeAt(1.3, true, []ScrapeResult{queries(t, 130)})
	tl.segment = "outage"
	tl.Record(Result{Outcome: Outcome{Code: "500", Err: errScrape}, Latency: 2 * time.Second})
	tl.closeAt(1.5, true, []ScrapeResult{{Err: errScrape}})
	tl.segment = "after"
	tl.closeAt(2.5, false, []ScrapeResult{queries(t, 400)})
	var segs []string
	for _, p := range tl.Points() {
		segs = append(segs, fmt.Sprintf("%s@%g", p.Segment, p.T))
	}
	if got, want := strings.Join(segs, " "), "before@1.3 outage@1.5 after@2.5"; got != want {
		t.Fatalf("points %s, want %s", got, want)
	}
	if p := tl.Points()[1]; p.Errors != 1 || p.ScrapeErrors != 1 {
		t.Errorf("outage point %+v: want its error and its failed scrape", p)
	}
}

// TestTimelineMarksSecondsBeforeAFirstScrape: a target whose first scrapes
// failed has no figures for those seconds; they are marked.
func TestTimelineMarksSecondsBeforeAFirstScrape(t *testing.T) {
	tl := newTestTimeline(2)
	tl.observe(0, []ScrapeResult{queries(t, 0), {Err: errScrape}})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 100), {Err: errScrape}})
	tl.closeAt(2, false, []ScrapeResult{queries(t, 200), queries(t, 5000)})
	tl.closeAt(3, false, []ScrapeResult{queries(t, 300), queries(t, 5100)})
	tl.finish()
	var failed []bool
	for _, p := range tl.Points() {
		failed = append(failed, p.ScrapeFailed)
	}
	if got := fmt.Sprint(failed); got != "[true true false]" {
		t.Errorf("scrape_failed = %s, want [true true false]", got)
	}
}

// TestTimelineIgnoresImpossibleCountersAndCarriesMissingSeries: a NaN or
// negative counter is not counted (the summary stays encodable), and a
// series missing from one scrape is not counted again from 0 when it is
// back.
func TestTimelineIgnoresImpossibleCountersAndCarriesMissingSeries(t *testing.T) {
	tl := newTestTimeline(1)
	tl.observe(0, []ScrapeResult{queries(t, 10)})
	tl.closeAt(1, false, []ScrapeResult{queries(t, math.NaN())})
	tl.closeAt(2, false, []ScrapeResult{queries(t, 30)})
	tl.closeAt(3, false, []ScrapeResult{queries(t, 40)})
	if got := tl.Increase().Sum("catalog_db_query_duration_seconds_count", nil); math.IsNaN(got) || got > 40 {
		t.Errorf("total after a NaN scrape = %v", got)
	}
	if _, err := json.Marshal(tl.Points()); err != nil {
		t.Errorf("points cannot be written: %v", err)
	}
	other, err := scrape.Parse(strings.NewReader("up 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	tl = newTestTimeline(1)
	tl.observe(0, []ScrapeResult{queries(t, 1e6)})
	tl.closeAt(1, false, []ScrapeResult{queries(t, 1e6+10)})
	tl.closeAt(2, false, []ScrapeResult{{Samples: other}})
	tl.closeAt(3, false, []ScrapeResult{queries(t, 1e6+30)})
	if got := tl.Increase().Sum("catalog_db_query_duration_seconds_count", nil); got != 30 {
		t.Errorf("total with a series missing once = %v, want 30", got)
	}
}
