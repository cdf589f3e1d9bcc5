package loadgen

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsObserve(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	ok := Result{Outcome: Outcome{Endpoint: "category_stats", Code: "200"}, Latency: 3 * time.Millisecond}
	m.Observe("stampede", ok)
	m.Observe("stampede", ok)
	m.Observe("stampede", Result{Outcome: Outcome{Endpoint: "category_stats", Code: CodeTimeout, Err: errors.New("x")}, Latency: 2 * time.Second})
	m.Observe("stampede", Result{Dropped: true})
	m.Observe("reserve", Result{Outcome: Outcome{Endpoint: "reserve", Code: "409"}, Latency: time.Millisecond})

	want := `
# HELP loadgen_requests_total Requests loadgen scheduled, by outcome: an HTTP status code, "timeout", "canceled", "error", or "dropped" for arrivals not started because -max-in-flight requests were in flight.
# TYPE loadgen_requests_total counter
loadgen_requests_total{code="200",endpoint="category_stats",scenario="stampede"} 2
loadgen_requests_total{code="409",endpoint="reserve",scenario="reserve"} 1
loadgen_requests_total{code="dropped",endpoint="-",scenario="stampede"} 1
loadgen_requests_total{code="timeout",endpoint="category_stats",scenario="stampede"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "loadgen_requests_total"); err != nil {
		t.Error(err)
	}
	// Dropped arrivals have no duration: three histogram series, four observations.
	if n := testutil.CollectAndCount(m.duration); n != 3 {
		t.Errorf("duration series = %d, want 3", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "loadgen_request_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			count += s.GetHistogram().GetSampleCount()
			sum += s.GetHistogram().GetSampleSum()
		}
	}
	if count != 4 || sum < 2.0069 || sum > 2.0071 {
		t.Errorf("durations: count %d sum %v, want 4 and 2.007", count, sum)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("NewMetrics registered the same metrics twice")
	}
}

func TestMetricsHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe("browse", Result{Outcome: Outcome{Endpoint: "product", Code: "200"}, Latency: time.Millisecond})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("Content-Type = %q, want OpenMetrics", ct)
	}
	if !strings.Contains(string(body), "# EOF") {
		t.Errorf("OpenMetrics body has no # EOF:\n%s", body)
	}

	// And loadgen's own Scrape reads it back.
	c, err := NewClient(srv.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	series, err := c.Scrape(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := series.Sum("loadgen_requests_total", map[string]string{"scenario": "browse"}); got != 1 {
		t.Errorf("scraped loadgen_requests_total{scenario=browse} = %v, want 1", got)
	}
	if got := series.Sum("loadgen_request_duration_seconds_count", nil); got != 1 {
		t.Errorf("scraped duration count = %v, want 1", got)
	}
}
