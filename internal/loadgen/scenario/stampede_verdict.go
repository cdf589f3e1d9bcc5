package scenario

import "fmt"

// The purposes of a stampede phase (PhaseVerdict.Purpose).
const (
	// purposeBaseline is a phase run to show the stampede (ttl, none): its
	// errors, drops and latency are the figures it exists to show, never a
	// failure.
	purposeBaseline = "baseline"
	// purposeBounded is a phase run to show that the stampede is gone
	// (xfetch): it fails when it passes its bounds.
	purposeBounded = "bounded"
)

// defaultMaxDuplicates is -max-duplicates' default: under xfetch the
// refresh lock lets one recompute per key run, so a duplicate is rare; a
// stampede has several per key per window.
const defaultMaxDuplicates = 0.5

// stampedeThreshold is the recomputes per key per TTL window above which a
// baseline phase is said to have stampeded (1 is the floor).
const stampedeThreshold = 1.5

// PhaseVerdict is a stampede phase judged by its purpose: a baseline
// phase (ttl, none) is expected to stampede and only records whether it
// did; a bounded phase (xfetch) passes when its failed requests (errors
// over requests sent) and its duplicate recomputes per key per TTL window
// stay within the run's bounds. Dropped arrivals are a figure of every
// phase, not a bound: loadgen drops an arrival when -max-in-flight
// requests are open, which on a machine too busy to keep up happens under
// any strategy.
type PhaseVerdict struct {
	Purpose string `json:"purpose"`
	// Stampeded says whether the phase recomputed each key more than 1.5
	// times per TTL window: what a baseline phase is there to show.
	Stampeded bool     `json:"stampeded"`
	Passed    bool     `json:"passed"`
	Failures  []string `json:"failures,omitempty"`
}

// purposeOf returns the purpose of a phase of strategy.
func purposeOf(strategy string) string {
	if strategy == "xfetch" {
		return purposeBounded
	}
	return purposeBaseline
}

// judge sets p.Verdict from p's figures: maxErrorRate bounds the error
// rate and maxDuplicates the duplicate recomputes per key per window of a
// bounded phase.
func (p *PhaseSummary) judge(maxErrorRate, maxDuplicates float64) {
	v := PhaseVerdict{Purpose: purposeOf(p.Strategy), Stampeded: p.RecomputesPerKeyWindow > stampedeThreshold}
	if v.Purpose == purposeBounded {
		if r := p.failedRate(); r > maxErrorRate {
			v.Failures = append(v.Failures, fmt.Sprintf("%s: %d of %d requests failed (%.4f > %.4f)", p.Name, p.Errors, p.Requests, r, maxErrorRate))
		}
		if p.DuplicatesPerKeyWindow > maxDuplicates {
			v.Failures = append(v.Failures, fmt.Sprintf("%s: %.2f duplicate recomputes per key per TTL window > %.2f",
				p.Name, p.DuplicatesPerKeyWindow, maxDuplicates))
		}
	}
	v.Passed = len(v.Failures) == 0
	p.Verdict = v
}

// failedRate is the share of the requests sent that failed (see
// Load.FailedRate).
func (p *PhaseSummary) failedRate() float64 {
	if p.Requests == 0 {
		return 0
	}
	return float64(p.Errors) / float64(p.Requests)
}

// verdictCell is a phase's verdict for the report's table.
func (v PhaseVerdict) verdictCell() string {
	switch {
	case v.Purpose == purposeBaseline && v.Stampeded:
		return "baseline: stampeded"
	case v.Purpose == purposeBaseline:
		return "baseline: no stampede"
	case v.Passed:
		return "pass"
	}
	return "FAIL"
}
