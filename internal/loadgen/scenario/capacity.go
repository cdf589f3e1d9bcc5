package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// maxCapacitySteps bounds the steps of one class's ramp, so a -step-factor
// barely above 1 is refused rather than run for days.
const maxCapacitySteps = 100

// Reasons a capacity step fails, as CapacityStep.Failed lists them.
const (
	failedP99    = "p99"
	failedErrors = "errors"
)

// errNotMeasured is returned (wrapped) when a capacity run could not get a
// single answer from some class: nothing was measured there.
var errNotMeasured = errors.New("capacity run measured nothing")

// capacityClasses returns the endpoint classes capacity can ramp, in their
// default order; each is the endpoint label of its requests.
func capacityClasses() []string {
	return []string{endpointProduct, endpointProducts, stampedeEndpoint, endpointSearch, reserveEndpoint}
}

// Capacity ramps an open-model arrival rate on one endpoint class at a
// time, step by step, until a step's p99 passes -slo-p99 or its error ratio
// passes -max-error-rate, and reports each class's highest rate that
// passed.
type Capacity struct {
	cfg          *Config
	classesRaw   string
	classes      []string
	stepFactor   float64
	stepAdd      float64
	stepDuration time.Duration
	warmup       time.Duration
	maxRate      float64
	sloP99       time.Duration
}

// Name is "capacity".
func (*Capacity) Name() string { return "capacity" }

// Usage is capacity's paragraph of -h.
func (*Capacity) Usage() string {
	return `the highest sustainable rate of each -classes endpoint class,
one class at a time: open-model steps of -step-duration from -rate,
each -step-factor times (plus -step-add) the last, up to -max-rate,
until a step's p99 passes -slo-p99 or more than -max-error-rate of
its requests fail (errors, timeouts, drops). Ignores -duration and
-max-requests; exits non-zero only if a class got no answer at all.`
}

func (c *Capacity) register(fs *flag.FlagSet) {
	fs.StringVar(&c.classesRaw, "classes", strings.Join(capacityClasses(), ","),
		"capacity: comma-separated endpoint classes to ramp, one after the other: product (GET /v1/products/{id}), products_batch (GET /v1/products?ids=), category_stats, search, reserve (reserve one unit of -skus, alternating with cancels)")
	fs.Float64Var(&c.stepFactor, "step-factor", 1.5,
		"capacity: each step's rate is the last one's times this (>= 1), plus -step-add")
	fs.Float64Var(&c.stepAdd, "step-add", 0,
		"capacity: requests per second added to each step's rate after -step-factor (>= 0)")
	fs.DurationVar(&c.stepDuration, "step-duration", 10*time.Second,
		"capacity: how long each step drives load; its requests in flight then finish before the next step")
	fs.DurationVar(&c.warmup, "ramp-warmup", 5*time.Second,
		"capacity: how long each class runs at -rate before its ramp, unjudged, so that the ramp measures warm caches and pools (0: none)")
	fs.Float64Var(&c.maxRate, "max-rate", 5000,
		"capacity: the ramp's highest rate in requests per second; a class that passes every step up to it sustains at least that (dropped arrivals count as errors: at high rates raise -max-in-flight above rate x latency)")
	fs.DurationVar(&c.sloP99, "slo-p99", 250*time.Millisecond,
		"capacity: a step whose p99 latency (from the scheduled start) exceeds this fails and ends the class's ramp")
}

func (c *Capacity) check() error {
	c.classes = nil
	for _, cl := range splitList(c.classesRaw) {
		switch {
		case !slices.Contains(capacityClasses(), cl):
			return fmt.Errorf("-classes: %q is not one of %s", cl, strings.Join(capacityClasses(), ", "))
		case slices.Contains(c.classes, cl):
			return fmt.Errorf("-classes: %q given twice", cl)
		}
		c.classes = append(c.classes, cl)
	}
	switch {
	case len(c.classes) == 0:
		return errors.New("-classes is empty")
	case !(c.stepFactor >= 1) || math.IsInf(c.stepFactor, 0):
		return fmt.Errorf("-step-factor must be a finite number >= 1, got %v", c.stepFactor)
	case !(c.stepAdd >= 0) || math.IsInf(c.stepAdd, 0):
		return fmt.Errorf("-step-add must be a finite number >= 0, got %v", c.stepAdd)
	case c.stepFactor == 1 && c.stepAdd == 0:
		return errors.New("-step-factor 1 with -step-add 0 never raises the rate: raise one of them")
	case c.stepDuration <= 0:
		return fmt.Errorf("-step-duration must be > 0, got %v", c.stepDuration)
	case c.warmup < 0:
		return fmt.Errorf("-ramp-warmup must be >= 0, got %v", c.warmup)
	case !validRate(c.maxRate) || c.maxRate < c.cfg.Rate:
		return fmt.Errorf("-max-rate must be in [-rate (%v), %g], got %v", c.cfg.Rate, loadgen.MaxRate, c.maxRate)
	case c.sloP99 <= 0:
		return fmt.Errorf("-slo-p99 must be > 0, got %v", c.sloP99)
	}
	if n := len(c.ramp().rates()); n > maxCapacitySteps {
		return fmt.Errorf("-rate %v to -max-rate %v at -step-factor %v and -step-add %v is %d steps per class, more than %d: raise the factor or the increment",
			c.cfg.Rate, c.maxRate, c.stepFactor, c.stepAdd, n, maxCapacitySteps)
	}
	return nil
}

// ramp returns the flags' ramp.
func (c *Capacity) ramp() ramp {
	return ramp{start: c.cfg.Rate, factor: c.stepFactor, add: c.stepAdd, max: c.maxRate,
		sloP99Ms: float64(c.sloP99) / float64(time.Millisecond), maxErrorRate: c.cfg.MaxErrorRate}
}

// ramp is one class's schedule of rates and the mark each step must pass.
type ramp struct {
	start, factor, add, max float64 // requests per second
	sloP99Ms                float64
	maxErrorRate            float64
}

// rates returns every step's offered rate: start, then each the last times
// factor plus add, while at most max (a rounding error above max still
// counts as max). It stops early, rather than loop, if the rate stops
// rising, and after maxCapacitySteps+1 rates.
func (p ramp) rates() []float64 {
	var out []float64
	for r := p.start; r <= p.max*(1+1e-9) && len(out) <= maxCapacitySteps; {
		out = append(out, r)
		next := r*p.factor + p.add
		if !(next > r) {
			break
		}
		r = next
	}
	return out
}

// judge sets s.Passed, and s.Failed to the reasons it did not: its p99
// above the SLO, its error ratio above the limit (both bounds included in
// a pass).
func (p ramp) judge(s *CapacityStep) {
	var why []string
	if s.Latency.P99Ms > p.sloP99Ms {
		why = append(why, failedP99)
	}
	if s.ErrorRate > p.maxErrorRate {
		why = append(why, failedErrors)
	}
	s.Passed, s.Failed = len(why) == 0, strings.Join(why, ", ")
}

// climb runs step at each of p's rates in turn, judging each and passing
// it to seen (when not nil), until one fails or every rate passed, and
// returns the steps run: the last one is the failed one unless all passed.
// It stops at step's first error, with the steps run before it.
func (p ramp) climb(ctx context.Context, step func(ctx context.Context, rate float64) (CapacityStep, error), seen func(CapacityStep)) ([]CapacityStep, error) {
	var steps []CapacityStep
	for _, rate := range p.rates() {
		s, err := step(ctx, rate)
		if err != nil {
			return steps, err
		}
		p.judge(&s)
		steps = append(steps, s)
		if seen != nil {
			seen(s)
		}
		if !s.Passed {
			break
		}
	}
	return steps, nil
}

// Run ramps each -classes class in turn, writes the report (summary.json,
// report.md, charts) and a table to stdout. A run that completes passes,
// unless some class got no answer without error at all (an error wrapping
// errNotMeasured, the report written too); a step that could not run (the
// context ended) is returned as it is, without a report. The reservations
// of the reserve class are cancelled when its ramp ends, however it ends;
// holds that could not be are an error too.
func (c *Capacity) Run(ctx context.Context, e *Env) error {
	cfg := e.cfg
	p := c.ramp()
	sum := &CapacitySummary{
		Load: newLoad(c.Name(), e), StepSeconds: c.stepDuration.Seconds(), StepFactor: c.stepFactor, StepAddRPS: c.stepAdd,
		WarmupSeconds: c.warmup.Seconds(), MaxRateRPS: c.maxRate, SLOP99Ms: p.sloP99Ms, Products: cfg.Mix.Products, ZipfS: cfg.Mix.ZipfS, BatchSize: cfg.Mix.BatchSize,
		HotKeys: cfg.HotKeys.Keys, SKUs: cfg.Reserve.SKUs, Verdict: Verdict{MaxErrorRate: cfg.MaxErrorRate},
	}
	steps := len(p.rates())
	fmt.Fprintf(e.stdout, "capacity: %d classes, up to %d steps of %v each (at most %v of load, plus the steps' tails)\n",
		len(c.classes), steps, c.stepDuration, time.Duration(len(c.classes)*steps)*c.stepDuration)
	b := newBrowser(cfg.Mix, uint64(time.Now().UnixNano()))
	var released error
	for _, class := range c.classes {
		cc, rerr, err := c.climbClass(ctx, e, p, class, b)
		released = errors.Join(released, rerr)
		if err != nil {
			return errors.Join(fmt.Errorf("class %s: %w", class, err), released)
		}
		sum.add(cc)
	}
	sum.finish()
	failErr := errors.Join(sum.check(), released)
	if err := e.writeReport(ctx, c.Name(), sum); err != nil {
		return errors.Join(err, released)
	}
	sum.WriteTable(e.stdout)
	return failErr
}

// climbClass runs class's ramp and returns its capacity, or the error of
// the step that could not run. The reserve class's holds are cancelled
// afterwards, however the ramp ended; released reports those that could
// not be.
func (c *Capacity) climbClass(ctx context.Context, e *Env, p ramp, class string, b *browser) (_ ClassCapacity, released, err error) {
	var do func(context.Context, loadgen.Request) loadgen.Outcome
	switch class {
	case stampedeEndpoint:
		do = hotKeyReads(e.targets, e.cfg.HotKeys.Keys)
	case reserveEndpoint:
		rv := &reserver{skus: e.cfg.Reserve.SKUs}
		defer func() {
			rv.release(ctx, e)
			if n := rv.openCount(); n > 0 {
				released = fmt.Errorf("%d capacity reservations could not be cancelled or settled (they expire with their hold)", n)
			}
		}()
		do = func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			return rv.do(ctx, e.targets.Pick(req.Seq), req.Seq)
		}
	default:
		do = func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			return e.targets.Pick(req.Seq).Get(ctx, class, b.path(class), nil)
		}
	}
	if c.warmup > 0 {
		w := *c
		w.stepDuration = c.warmup
		if _, err := w.runStep(ctx, e, class+" warm-up", "", p.start, do); err != nil {
			return ClassCapacity{}, nil, err
		}
	}
	steps, err := p.climb(ctx, func(ctx context.Context, rate float64) (CapacityStep, error) {
		return c.runStep(ctx, e, class, class, rate, do)
	}, func(s CapacityStep) {
		fmt.Fprintf(e.stdout, "capacity %-15s %9s req/s: p50 %8.2fms p99 %8.2fms, error ratio %.4f: %s\n",
			class, rps(s.RateRPS), s.Latency.P50Ms, s.Latency.P99Ms, s.ErrorRate, s.verdict())
	})
	if err != nil {
		return ClassCapacity{}, nil, err
	}
	return capacityOf(class, steps), nil, nil
}

// runStep drives class's requests (do) at rate for -step-duration, waits
// for those in flight, and returns the step's figures, not yet judged. Its
// slowest requests are kept under phase (the class; "" for the warm-up,
// whose are not).
func (c *Capacity) runStep(ctx context.Context, e *Env, class, phase string, rate float64, do func(context.Context, loadgen.Request) loadgen.Outcome) (CapacityStep, error) {
	e.stats.SetPhase(fmt.Sprintf("%s %s %s/s", c.Name(), class, rps(rate)))
	s := CapacityStep{RateRPS: rate, Seconds: c.stepDuration.Seconds(), ErrorCodes: map[string]int64{}}
	h := loadgen.NewHistogram()
	var mu sync.Mutex
	r := &loadgen.Runner{
		Rate: rate, Duration: c.stepDuration, MaxInFlight: e.cfg.MaxInFlight, Do: do,
		OnResult: func(res loadgen.Result) {
			e.observe(c.Name(), res)
			if phase != "" {
				e.slowest.Record(phase, res)
			}
			mu.Lock()
			defer mu.Unlock()
			s.count(res, h)
		},
	}
	rs, err := r.Run(ctx)
	if err != nil {
		return CapacityStep{}, err
	}
	s.finish(rs, h)
	return s, nil
}
