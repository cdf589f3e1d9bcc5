package scenario

import (
	"reflect"
	"testing"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// TestErrorsChartDrawsOnlySeriesWithData: errors.png names in its legend
// (and draws) only the series with a point above zero; when none has one,
// a single flat line says so.
func TestErrorsChartDrawsOnlySeriesWithData(t *testing.T) {
	quiet := []loadgen.Point{{T: 1, Requests: 200}, {T: 2, Requests: 200}}
	dropping := []loadgen.Point{{T: 1, Requests: 100, Dropped: 100}, {T: 2, Requests: 200, ScrapeErrors: 1}}
	names := func(c report.Chart) []string {
		var out []string
		for _, l := range c.Lines {
			out = append(out, l.Name)
		}
		return out
	}
	c := errorsChart([]string{"ttl ", "xfetch:1 ", "xfetch:0.5 "}, [][]loadgen.Point{dropping, quiet, quiet}, "seconds")
	if got, want := names(c), []string{"ttl dropped", "ttl scrape errors"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	c = errorsChart([]string{""}, [][]loadgen.Point{quiet}, "seconds")
	if got := names(c); !reflect.DeepEqual(got, []string{"none: all zero"}) || len(c.Lines[0].X) != 2 {
		t.Errorf("all zero: lines %q (%+v), want one flat line saying so", got, c.Lines)
	}
}

// TestNearReportChartsCommandsPerRequest: the near report's first chart is
// its headline figure, a bar per phase of the cache Redis's commands per
// request, coloured by side.
func TestNearReportChartsCommandsPerRequest(t *testing.T) {
	s := &NearSummary{Redis: []NearPhase{
		{Name: "off ttl", RedisCommandsPerRequest: 0.96},
		{Name: "off xfetch:1", RedisCommandsPerRequest: 1.01},
		{Name: "on ttl", RedisCommandsPerRequest: 0.06},
		{Name: "on xfetch:1", RedisCommandsPerRequest: 0.02},
	}}
	rep := s.Report()
	c := rep.Charts[0]
	want := []report.Bar{
		{Label: "off ttl", Text: "0.96", Group: "near cache off", Value: 0.96},
		{Label: "off xfetch:1", Text: "1.01", Group: "near cache off", Value: 1.01},
		{Label: "on ttl", Text: "0.06", Group: "near cache on", Value: 0.06},
		{Label: "on xfetch:1", Text: "0.02", Group: "near cache on", Value: 0.02},
	}
	if c.File != "redis_commands.png" || !reflect.DeepEqual(c.Bars, want) {
		t.Errorf("first chart %s with bars %+v, want redis_commands.png with %+v", c.File, c.Bars, want)
	}
	if _, err := rep.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
