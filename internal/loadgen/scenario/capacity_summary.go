package scenario

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// CapacitySummary is every figure of one capacity run, written as
// summary.json. Load.RateRPS is the first step's rate; Verdict.MaxErrorRate
// is the error ratio a step may reach and still pass.
type CapacitySummary struct {
	Load
	StepSeconds float64 `json:"step_seconds"`
	// WarmupSeconds is how long each class ran at the first rate, unjudged,
	// before its ramp.
	WarmupSeconds float64 `json:"warmup_seconds"`
	StepFactor    float64 `json:"step_factor"`
	StepAddRPS    float64 `json:"step_add_rps"`
	MaxRateRPS    float64 `json:"max_rate_rps"`
	SLOP99Ms      float64 `json:"slo_p99_ms"`
	// What the classes read: product ids 1..Products Zipf(ZipfS)-distributed
	// (product, products_batch with BatchSize ids), categories 1..HotKeys
	// (category_stats), and the SKUs reserved.
	Products  int     `json:"products"`
	ZipfS     float64 `json:"zipf_s"`
	BatchSize int     `json:"batch_size"`
	HotKeys   int     `json:"hot_keys"`
	SKUs      []int64 `json:"skus"`

	// Classes are the ramps, one per class, in the order run.
	Classes []ClassCapacity `json:"classes"`
	Traces
	Verdict
}

// ClassCapacity is one class's ramp and what it sustained.
type ClassCapacity struct {
	Class string `json:"class"`
	// CapacityRPS is the offered rate of the last step that passed (the
	// highest, as the ramp stops at the first failure); 0 when the first
	// step failed.
	CapacityRPS float64 `json:"capacity_rps"`
	// FailedRPS is the offered rate of the step that ended the ramp and
	// Reason why it failed ("p99", "errors" or "p99, errors"); both are
	// empty when every step up to -max-rate passed.
	FailedRPS float64 `json:"failed_rps,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	// Steps are the steps run, in order; only the last may have failed.
	Steps []CapacityStep `json:"steps"`
}

// CapacityStep is one step of a ramp: the open-model load of one class at
// one offered rate for a fixed time.
type CapacityStep struct {
	RateRPS   float64 `json:"offered_rps"`
	Seconds   float64 `json:"seconds"`
	Scheduled int64   `json:"scheduled"`
	// Requests are the arrivals started and finished, Errors those among
	// them that failed (transport errors, timeouts, any status the class
	// does not expect, 5xx), Dropped the arrivals not started because
	// -max-in-flight requests were in flight.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	Dropped  int64 `json:"dropped"`
	// ErrorCodes counts the failed and dropped arrivals by code.
	ErrorCodes  map[string]int64 `json:"error_codes,omitempty"`
	AchievedRPS float64          `json:"achieved_rps"`
	// ErrorRate is (Errors + Dropped) / Scheduled.
	ErrorRate float64 `json:"error_rate"`
	// Latency covers every finished request, failed ones included, from
	// its scheduled start.
	Latency loadgen.LatencySummary `json:"latency"`
	Passed  bool                   `json:"passed"`
	// Failed is why the step did not pass: "p99", "errors" or both.
	Failed string `json:"failed,omitempty"`
}

// count adds a Runner result; the caller serialises calls.
func (s *CapacityStep) count(res loadgen.Result, h *loadgen.Histogram) {
	if res.Dropped {
		s.Dropped++
		s.ErrorCodes[loadgen.CodeDropped]++
		return
	}
	s.Requests++
	if res.Err != nil {
		s.Errors++
		code := res.Code
		if code == "" {
			code = "-"
		}
		s.ErrorCodes[code]++
	}
	h.Record(res.Latency)
}

// finish computes the step's rates and latency from the Runner's counts.
func (s *CapacityStep) finish(rs loadgen.Summary, h *loadgen.Histogram) {
	s.Scheduled = rs.Scheduled
	if el := rs.End.Sub(rs.Start); el > 0 {
		s.AchievedRPS = float64(s.Requests) / el.Seconds()
	}
	if rs.Scheduled > 0 {
		s.ErrorRate = float64(s.Errors+s.Dropped) / float64(rs.Scheduled)
	}
	s.Latency = loadgen.LatencyOf(h)
}

// verdict is "passed", or "failed: " and the reasons.
func (s CapacityStep) verdict() string {
	if s.Passed {
		return "passed"
	}
	return "failed: " + s.Failed
}

// capacityOf returns class's capacity from its judged steps: the last
// passing step's rate, and the first failing step's rate and reasons.
func capacityOf(class string, steps []CapacityStep) ClassCapacity {
	c := ClassCapacity{Class: class, Steps: steps}
	for _, s := range steps {
		if !s.Passed {
			c.FailedRPS, c.Reason = s.RateRPS, s.Failed
			break
		}
		c.CapacityRPS = s.RateRPS
	}
	return c
}

// sustained returns the step run at the class's capacity, false when the
// first step failed.
func (c ClassCapacity) sustained() (CapacityStep, bool) {
	for i := len(c.Steps) - 1; i >= 0; i-- {
		if c.Steps[i].Passed {
			return c.Steps[i], true
		}
	}
	return CapacityStep{}, false
}

// failed returns the step that ended the ramp, false when none failed.
func (c ClassCapacity) failed() (CapacityStep, bool) {
	if n := len(c.Steps); n > 0 && !c.Steps[n-1].Passed {
		return c.Steps[n-1], true
	}
	return CapacityStep{}, false
}

// add counts a class's ramp into the run's totals.
func (s *CapacitySummary) add(c ClassCapacity) {
	s.Classes = append(s.Classes, c)
	var scheduled, failed int64
	for _, cs := range s.Classes {
		for _, st := range cs.Steps {
			scheduled += st.Scheduled
			failed += st.Errors + st.Dropped
		}
	}
	for _, st := range c.Steps {
		s.Requests += st.Requests
		s.Errors += st.Errors
		s.Dropped += st.Dropped
	}
	if scheduled > 0 {
		s.ErrorRate = float64(failed) / float64(scheduled)
	}
}

// check sets the verdict: the run passes unless some class got no answer
// without error in its whole ramp, when nothing was measured there (the
// error wraps errNotMeasured). Overload is the measurement, not a failure.
func (s *CapacitySummary) check() error {
	for _, c := range s.Classes {
		var ok int64
		for _, st := range c.Steps {
			ok += st.Requests - st.Errors
		}
		if ok == 0 {
			s.Failures = append(s.Failures, fmt.Sprintf("%s: no request was answered without error in %d steps: nothing was measured (is the target an API with this catalog?)",
				c.Class, len(c.Steps)))
		}
	}
	s.Passed = len(s.Failures) == 0
	if !s.Passed {
		return fmt.Errorf("%w: %s", errNotMeasured, strings.Join(s.Failures, "; "))
	}
	return nil
}

// why explains a failed step against the run's marks.
func (s *CapacitySummary) why(st CapacityStep) string {
	var out []string
	if st.Latency.P99Ms > s.SLOP99Ms {
		out = append(out, fmt.Sprintf("p99 %s ms > %s ms", f2(st.Latency.P99Ms), f2(s.SLOP99Ms)))
	}
	if st.ErrorRate > s.MaxErrorRate {
		codes := make([]string, 0, len(st.ErrorCodes))
		for _, k := range sortedKeys(st.ErrorCodes) {
			codes = append(codes, fmt.Sprintf("%s %d", k, st.ErrorCodes[k]))
		}
		msg := fmt.Sprintf("error ratio %s > %s", f4(st.ErrorRate), f4(s.MaxErrorRate))
		if len(codes) > 0 {
			msg += " (" + strings.Join(codes, ", ") + ")"
		}
		out = append(out, msg)
	}
	return strings.Join(out, "; ")
}

// WriteTable prints one line per class: its capacity, the latency and
// error ratio there, and the step that failed.
func (s *CapacitySummary) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-15s %12s %9s %9s %8s %12s %s\n", "class", "capacity/s", "p50ms", "p99ms", "errors", "failed at/s", "why")
	for _, c := range s.Classes {
		at, _ := c.sustained()
		failedAt, why := "-", "reached -max-rate"
		if f, ok := c.failed(); ok {
			failedAt, why = rps(f.RateRPS), s.why(f)
		}
		fmt.Fprintf(w, "%-15s %12s %9.2f %9.2f %8.4f %12s %s\n", c.Class, rps(c.CapacityRPS), at.Latency.P50Ms, at.Latency.P99Ms, at.ErrorRate, failedAt, why)
	}
}

// Report renders the run: each class's capacity, every step, and p99
// latency and error ratio against the offered rate with the marks as
// lines.
func (s *CapacitySummary) Report() report.Report {
	table := report.Table{Title: "Highest sustainable rate per class",
		Header: []string{"class", "capacity req/s", "p50 ms", "p99 ms", "error ratio", "failed at req/s", "why"},
		Note: fmt.Sprintf("Capacity: the offered rate of the last step whose p99 was at most %s ms and whose error ratio "+
			"(errors, timeouts and dropped arrivals over scheduled ones) was at most %s; 0 when the first step failed. "+
			"p50, p99 and error ratio are that step's.", f2(s.SLOP99Ms), f4(s.MaxErrorRate))}
	steps := report.Table{Title: "Steps",
		Header: []string{"class", "offered req/s", "achieved req/s", "requests", "errors", "dropped", "p50 ms", "p99 ms", "max ms", "error ratio", "step"}}
	latency := report.Chart{File: "capacity.png", Title: "p99 latency per offered rate (from the scheduled start), one ramp per class",
		XLabel: "offered requests / s", YLabel: "p99 ms", LogY: true}
	errs := report.Chart{File: "capacity_errors.png", Title: "Error ratio per offered rate (errors, timeouts, drops)",
		XLabel: "offered requests / s", YLabel: "failed / scheduled", YMin: ptr(0.0)}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range s.Classes {
		at, ok := c.sustained()
		row := []string{c.Class, rps(c.CapacityRPS), "-", "-", "-", "-", "reached -max-rate"}
		if ok {
			row[2], row[3], row[4] = f2(at.Latency.P50Ms), f2(at.Latency.P99Ms), f4(at.ErrorRate)
		}
		if f, ok := c.failed(); ok {
			row[5], row[6] = rps(f.RateRPS), s.why(f)
		}
		table.Rows = append(table.Rows, row)
		lat, er := report.Line{Name: c.Class}, report.Line{Name: c.Class}
		for _, st := range c.Steps {
			steps.Rows = append(steps.Rows, []string{c.Class, rps(st.RateRPS), fmt.Sprintf("%.1f", st.AchievedRPS), fmt.Sprint(st.Requests),
				fmt.Sprint(st.Errors), fmt.Sprint(st.Dropped), f2(st.Latency.P50Ms), f2(st.Latency.P99Ms), f2(st.Latency.MaxMs),
				f4(st.ErrorRate), st.verdict()})
			p99 := math.NaN()
			if st.Latency.Count > 0 {
				p99 = st.Latency.P99Ms
			}
			lat.X, lat.Y = append(lat.X, st.RateRPS), append(lat.Y, p99)
			er.X, er.Y = append(er.X, st.RateRPS), append(er.Y, st.ErrorRate)
			lo, hi = math.Min(lo, st.RateRPS), math.Max(hi, st.RateRPS)
		}
		latency.Lines, errs.Lines = append(latency.Lines, lat), append(errs.Lines, er)
	}
	if lo <= hi {
		latency.Lines = append(latency.Lines, report.Line{Name: fmt.Sprintf("SLO: p99 %g ms", s.SLOP99Ms), X: []float64{lo, hi}, Y: []float64{s.SLOP99Ms, s.SLOP99Ms}})
		errs.Lines = append(errs.Lines, report.Line{Name: fmt.Sprintf("limit: %g", s.MaxErrorRate), X: []float64{lo, hi}, Y: []float64{s.MaxErrorRate, s.MaxErrorRate}})
	}
	step := fmt.Sprintf("times %g", s.StepFactor)
	if s.StepAddRPS > 0 {
		step += fmt.Sprintf(" plus %g requests/s", s.StepAddRPS)
	}
	intro := fmt.Sprintf("Each class on its own on %s, after %gs at the first rate to warm up: open-model steps of %gs from %g requests/s, each %s the last, up to %g; "+
		"a class's ramp ends at the first step whose p99 passes %s ms or whose error ratio passes %s. "+
		"product and products_batch read Zipf(s=%g) over %d products (batches of %d), category_stats categories 1..%d, "+
		"reserve reserves one unit of products %v and cancels the oldest hold in turn. %s to %s.",
		s.Target, s.WarmupSeconds, s.StepSeconds, s.RateRPS, step, s.MaxRateRPS, f2(s.SLOP99Ms), f4(s.MaxErrorRate),
		s.ZipfS, s.Products, s.BatchSize, s.HotKeys, s.SKUs, s.Started.Format(time.RFC3339), s.Finished.Format(time.RFC3339))
	return s.Traces.addTo(report.Report{Title: "Capacity: the highest sustainable rate per endpoint class", Intro: withConditions(intro, s.Conditions, s.Machine),
		Tables: []report.Table{table, steps}, Charts: []report.Chart{latency, errs}, Notes: s.Failures})
}

// rps formats a rate in requests per second to a tenth, as short as it
// goes ("50", "112.5").
func rps(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func f4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
