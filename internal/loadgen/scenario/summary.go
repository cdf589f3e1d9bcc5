package scenario

import (
	"context"
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

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// reported is a summary writeReport writes: its Traces, filled in first,
// and its report.
type reported interface {
	Report() report.Report
	tracing() *Traces
}

// writeReport writes the report directory of scenario: it fills in sum's
// Traces (reading the slowest traces from Jaeger with -jaeger-url), then
// writes summary.json from sum, report.md and the charts of sum.Report(),
// and lists the files on stdout.
func (e *Env) writeReport(ctx context.Context, scenario string, sum reported) error {
	dir, err := e.reportDir(scenario)
	if err != nil {
		return err
	}
	e.collectTraces(ctx, sum.tracing())
	stdout := e.stdout
	path, err := writeSummary(dir, sum)
	if err != nil {
		return err
	}
	files, err := sum.Report().Write(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "report: %s\n", strings.Join(append([]string{path}, files...), " "))
	return nil
}

// Load opens every summary: the scenario, where and how fast it sent its
// load, when, and what became of the requests.
type Load struct {
	Scenario  string    `json:"scenario"`
	Target    string    `json:"target"`
	RateRPS   float64   `json:"rate_rps"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Requests  int64     `json:"requests"`
	Errors    int64     `json:"errors"`
	Dropped   int64     `json:"dropped"`
	ErrorRate float64   `json:"error_rate"` // (errors + dropped) / scheduled
	// Conditions says how busy the machine was (-conditions), e.g. "busy:
	// one CPU hog per core"; the report's introduction repeats it.
	Conditions string `json:"conditions,omitempty"`
	// Machine is what loadgen read of the machine (CPUs, load average at
	// the start and end), whatever -conditions says; reports written
	// before it was recorded have none.
	Machine *Machine `json:"machine,omitempty"`
}

// newLoad starts the Load of a run of scenario.
func newLoad(scenario string, e *Env) Load {
	return Load{Scenario: scenario, Target: e.targets.String(), RateRPS: e.cfg.Rate, Started: time.Now().UTC(), Conditions: e.cfg.Conditions,
		Machine: startMachine()}
}

// finish marks the run's end: the time and the machine's load average.
func (l *Load) finish() {
	l.Finished = time.Now().UTC()
	l.Machine.end()
}

// withConditions appends the machine's conditions to a report's
// introduction: -conditions as written, then what loadgen read of the
// machine, when the run recorded them.
func withConditions(intro, conditions string, m *Machine) string {
	if conditions != "" {
		intro += " Machine: " + conditions + "."
	}
	if m != nil {
		intro += " Measured by loadgen: " + m.String() + "."
	}
	return intro
}

// Verdict closes every summary: the error-rate bound, whether the run
// passed and the reasons it did not.
type Verdict struct {
	MaxErrorRate float64  `json:"max_error_rate"`
	Passed       bool     `json:"passed"`
	Failures     []string `json:"failures,omitempty"`
}

// summary is what conclude writes: the report and a table for stdout.
type summary interface {
	reported
	WriteTable(w io.Writer)
}

// FailedRate is the share of the requests sent that failed (errors /
// requests): what -max-error-rate bounds for browse and stampede's bounded
// phases. Dropped arrivals are not in it: loadgen drops an arrival when
// -max-in-flight requests are open, which is the machine not keeping up
// with the schedule (ErrorRate counts them).
func (l *Load) FailedRate() float64 {
	if l.Requests == 0 {
		return 0
	}
	return float64(l.Errors) / float64(l.Requests)
}

// conclude adds the failed requests' failure to v when load's FailedRate
// passes v's bound, writes sum's report and table, and returns v's
// failures as an error wrapping errErrorRate.
func (e *Env) conclude(ctx context.Context, scenario string, sum summary, v *Verdict, load *Load) error {
	if r := load.FailedRate(); r > v.MaxErrorRate {
		v.Failures = append(v.Failures, fmt.Sprintf("%d of %d requests failed (%.4f > %.4f)", load.Errors, load.Requests, r, v.MaxErrorRate))
	}
	return e.concludeJudged(ctx, scenario, sum, v, errErrorRate)
}

// concludeJudged writes sum's report and table and returns v's failures,
// already filled in by the scenario, as an error wrapping failed.
func (e *Env) concludeJudged(ctx context.Context, scenario string, sum summary, v *Verdict, failed error) error {
	v.Passed = len(v.Failures) == 0
	if err := e.writeReport(ctx, scenario, sum); err != nil {
		return err
	}
	sum.WriteTable(e.stdout)
	if !v.Passed {
		return fmt.Errorf("%w: %s", failed, strings.Join(v.Failures, "; "))
	}
	return nil
}

// timelineLine turns points into a chart line of y(point, seconds the point
// covers); y returns NaN for a gap.
func timelineLine(name string, pts []loadgen.Point, y func(p loadgen.Point, dt float64) float64) report.Line {
	l := report.Line{Name: name}
	prev := 0.0
	for _, p := range pts {
		v := math.NaN()
		if dt := p.T - prev; dt > 0 {
			v = y(p, dt)
		}
		prev = p.T
		l.X = append(l.X, p.T)
		l.Y = append(l.Y, v)
	}
	return l
}

// latencyY plots a client latency figure; an interval in which no request
// finished is a gap (a hung server shows as its errors, see errorsChart).
func latencyY(v func(loadgen.Point) float64) func(loadgen.Point, float64) float64 {
	return func(p loadgen.Point, _ float64) float64 {
		if p.Requests == 0 {
			return math.NaN()
		}
		return v(p)
	}
}

// clientRate plots a client count per second.
func clientRate(v func(loadgen.Point) float64) func(loadgen.Point, float64) float64 {
	return func(p loadgen.Point, dt float64) float64 { return v(p) / dt }
}

// serverRate plots a server count per second; intervals whose figures are
// incomplete (ScrapeFailed) are gaps.
func serverRate(v func(loadgen.Point) float64) func(loadgen.Point, float64) float64 {
	return func(p loadgen.Point, dt float64) float64 {
		if p.ScrapeFailed {
			return math.NaN()
		}
		return v(p) / dt
	}
}

// serverHitRatio plots the hit ratio, a gap where figures are incomplete.
func serverHitRatio(p loadgen.Point, _ float64) float64 {
	if p.ScrapeFailed {
		return math.NaN()
	}
	return p.HitRatio()
}

// errorsChart plots, per run or phase (names, pts), the requests that failed
// (timeouts, refused connections, 5xx), the arrivals dropped unsent
// (-max-in-flight reached) and the failed scrapes per second, so a hung or
// dead target shows as errors rather than as a gap. Only the series with a
// point above zero are drawn and named in the legend.
func errorsChart(names []string, pts [][]loadgen.Point, xlabel string) report.Chart {
	c := report.Chart{File: "errors.png", Title: "Failed requests, dropped arrivals and failed /metrics scrapes per second", XLabel: xlabel, YLabel: "per second",
		YMin: ptr(0.0)}
	series := []struct {
		name string
		v    func(loadgen.Point) float64
	}{
		{"request errors", func(p loadgen.Point) float64 { return float64(p.Errors) }},
		{"dropped", func(p loadgen.Point) float64 { return float64(p.Dropped) }},
		{"scrape errors", func(p loadgen.Point) float64 { return float64(p.ScrapeErrors) }},
	}
	var zero []report.Line
	for i, name := range names {
		for _, sr := range series {
			l := timelineLine(name+sr.name, pts[i], clientRate(sr.v))
			if hasData(l) {
				c.Lines = append(c.Lines, l)
			} else {
				zero = append(zero, l)
			}
		}
	}
	// A series that stayed at zero has no line and no legend entry; when
	// every one did, one flat line says so.
	if len(c.Lines) == 0 && len(zero) > 0 {
		l := zero[0]
		l.Name = "none: all zero"
		c.Lines = []report.Line{l}
	}
	return c
}

// hasData reports whether l has a point other than zero (gaps aside).
func hasData(l report.Line) bool {
	for _, y := range l.Y {
		if y != 0 && !math.IsNaN(y) && !math.IsInf(y, 0) {
			return true
		}
	}
	return false
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func ptr[T any](v T) *T   { return &v }

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

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Replot renders report.md and the charts of dir again from its
// summary.json (written by any scenario but demo), e.g. after a change to
// the report's layout. It sends no request.
func Replot(dir string, stdout io.Writer) error {
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
	var rep report.Report
	switch head.Scenario {
	case "stampede":
		rep, err = reportOf[StampedeSummary](b)
	case "browse":
		rep, err = reportOf[BrowseSummary](b)
	case "reserve":
		rep, err = reportOf[ReserveSummary](b)
	case "lostlock":
		rep, err = reportOf[LostLockSummary](b)
	case "capacity":
		rep, err = reportOf[CapacitySummary](b)
	case "near":
		rep, err = reportOf[NearSummary](b)
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
	Report() report.Report
}](b []byte) (report.Report, error) {
	var s S
	if err := json.Unmarshal(b, &s); err != nil {
		return report.Report{}, err
	}
	return P(&s).Report(), nil
}
