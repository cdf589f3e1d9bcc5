package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// The stampede scenario's names: the cache it switches, the endpoint label
// of its requests.
const (
	stampedeCache    = "category_stats"
	stampedeEndpoint = "category_stats"
)

// Recompute reasons and get results of the cachex metrics (docs/metrics.md).
var (
	recomputeReasons = []string{"miss", "early", "expired"}
	getResults       = []string{"hit", "early_refresh", "miss", "stale", "bypass"}
)

// Stampede switches the category_stats cache through each -phases strategy
// and drives -rate requests/s at the -hot-keys categories for
// -phase-duration each.
type Stampede struct {
	cfg           *Config
	phaseDuration time.Duration
	force         bool
	maxDuplicates float64
}

// minWindows is the shortest phase, in TTL windows, stampede accepts
// without -force: the first window of a phase fills the cache (every key
// misses once whatever the strategy), so with fewer than three the
// per-window figures are mostly that fill.
const minWindows = 3

// Name is "stampede".
func (*Stampede) Name() string { return "stampede" }

// Usage is stampede's paragraph of -h.
func (*Stampede) Usage() string {
	return `switch the category_stats cache through each -phases strategy and
drive -rate requests/s at -hot-keys categories for -phase-duration
each; the report compares recomputes per key per TTL window, hit
ratio, early refreshes and latency per strategy.`
}

func (s *Stampede) register(fs *flag.FlagSet) {
	fs.DurationVar(&s.phaseDuration, "phase-duration", 30*time.Second,
		"stampede: how long each phase drives load; at least three -cache-ttl windows unless -force")
	fs.BoolVar(&s.force, "force", false,
		"stampede: run phases shorter than three -cache-ttl windows (their per-window figures are mostly the first fill)")
	fs.Float64Var(&s.maxDuplicates, "max-duplicates", defaultMaxDuplicates,
		"stampede: fail an xfetch phase whose duplicate recomputes (values discarded because another recompute stored the key first) per key per TTL window exceed this; ttl and none phases are baselines, expected to stampede, and never fail on their errors, drops or duplicates")
}

func (s *Stampede) check() error {
	ttl := s.cfg.HotKeys.CacheTTL
	switch {
	case s.phaseDuration <= 0:
		return fmt.Errorf("-phase-duration must be > 0, got %v", s.phaseDuration)
	case !(s.maxDuplicates >= 0):
		return fmt.Errorf("-max-duplicates must be >= 0, got %v", s.maxDuplicates)
	case s.phaseDuration < minWindows*ttl && !s.force:
		return fmt.Errorf("-phase-duration %v is shorter than %d -cache-ttl windows (%v): the figures would be mostly the first fill of the cache; lengthen it or pass -force",
			s.phaseDuration, minWindows, minWindows*ttl)
	}
	return s.cfg.needAdmin("stampede")
}

// errErrorRate is returned (wrapped) when the run's error rate passes
// -max-error-rate.
var errErrorRate = errors.New("error rate above -max-error-rate")

// errPhaseBounds is returned (wrapped) when a bounded stampede phase
// passed its error-rate or duplicate bound.
var errPhaseBounds = errors.New("a bounded phase passed its bounds")

// Run runs every phase in turn, writes the report (summary.json,
// report.md, charts) and a table to stdout, and returns an error when a phase
// could not run or a bounded (xfetch) phase passed its error-rate or
// duplicate bound (the report is written in that case too); a baseline
// phase (ttl, none) never fails the run: its errors and drops are what it
// shows. The cache's strategy is set back to what it
// was on every target when the run ends, however it ends.
func (s *Stampede) Run(ctx context.Context, e *Env) (err error) {
	cfg, hk := e.cfg, e.cfg.HotKeys
	restore, err := saveStrategy(ctx, e)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, restore()) }()
	sum := newStampedeSummary(s.Name(), e, s)
	var scheduled int64
	for _, p := range hk.Phases {
		ps, _, sched, err := s.runPhase(ctx, e, p)
		if err != nil {
			return fmt.Errorf("phase %s: %w", p.Name, err)
		}
		sum.add(ps, s.maxDuplicates, cfg.MaxErrorRate)
		scheduled += sched
	}
	sum.finish()
	if scheduled > 0 {
		sum.ErrorRate = float64(sum.Errors+sum.Dropped) / float64(scheduled)
	}
	// The run's error rate is a figure: each phase was judged by its own.
	return e.concludeJudged(ctx, s.Name(), sum, &sum.Verdict, errPhaseBounds)
}

// newStampedeSummary opens the summary of a run of s's phases.
func newStampedeSummary(scenario string, e *Env, s *Stampede) *StampedeSummary {
	hk := e.cfg.HotKeys
	return &StampedeSummary{
		Load:            newLoad(scenario, e),
		Cache:           stampedeCache,
		PhaseSeconds:    s.phaseDuration.Seconds(),
		CacheTTLSeconds: hk.CacheTTL.Seconds(),
		WarmupSeconds:   hk.Warmup.Seconds(),
		HotKeys:         hk.Keys,
		MaxDuplicates:   s.maxDuplicates,
		Verdict:         Verdict{MaxErrorRate: e.cfg.MaxErrorRate},
	}
}

// add judges the phase ps and adds it to the run.
func (sum *StampedeSummary) add(ps PhaseSummary, maxDuplicates, maxErrorRate float64) {
	ps.judge(maxErrorRate, maxDuplicates)
	sum.Failures = append(sum.Failures, ps.Verdict.Failures...)
	sum.Phases = append(sum.Phases, ps)
	sum.Requests += ps.Requests
	sum.Errors += ps.Errors
	sum.Dropped += ps.Dropped
}

// saveStrategy reads the category_stats strategy of every target and
// returns a function that sets each back, with a fresh context (the run's
// may be cancelled).
func saveStrategy(ctx context.Context, e *Env) (restore func() error, err error) {
	saved := make([]map[string]any, len(e.targets))
	for i, c := range e.targets {
		var caches map[string]map[string]any
		if err := c.AdminGet(ctx, "/admin/caches", e.cfg.AdminToken, &caches); err != nil {
			return nil, err
		}
		if saved[i] = caches[stampedeCache]; saved[i] == nil {
			return nil, fmt.Errorf("%s: no %s cache in GET /admin/caches", c, stampedeCache)
		}
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		var errs []error
		for i, c := range e.targets {
			if err := c.AdminPut(ctx, "/admin/caches/"+stampedeCache, e.cfg.AdminToken, saved[i]); err != nil {
				errs = append(errs, fmt.Errorf("restore the %s strategy: %w", stampedeCache, err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

// apply switches the category_stats cache of every target to p.
func (p Phase) apply(ctx context.Context, ts loadgen.Targets, token string) error {
	body := map[string]any{"strategy": p.Strategy}
	if p.Beta != nil {
		body["beta"] = *p.Beta
	}
	return ts.AdminPut(ctx, "/admin/caches/"+stampedeCache, token, body)
}

// hotKeyReads returns a Runner.Do that reads the statistics of categories
// 1..n in turn, spreading the requests over ts.
func hotKeyReads(ts loadgen.Targets, n int) func(context.Context, loadgen.Request) loadgen.Outcome {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/v1/categories/%d/stats", i+1)
	}
	return func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
		return ts.Pick(req.Seq).Get(ctx, stampedeEndpoint, paths[req.Seq%int64(n)], nil)
	}
}

// runPhase switches the cache to p, drives the phase's load and returns its
// figures, the increase of the targets' counters over it and the number of
// scheduled arrivals.
func (s *Stampede) runPhase(ctx context.Context, e *Env, p Phase) (PhaseSummary, scrape.Samples, int64, error) {
	cfg, hk := e.cfg, e.cfg.HotKeys
	if err := p.apply(ctx, e.targets, cfg.AdminToken); err != nil {
		return PhaseSummary{}, nil, 0, err
	}
	e.stats.SetPhase(p.Name)
	// The timeline keeps the phase's whole latency (its one segment); warm
	// holds the requests scheduled after the warm-up.
	warm := loadgen.NewHistogram()
	warmSeq := int64(math.Ceil(hk.Warmup.Seconds() * cfg.Rate))
	tl := loadgen.NewTimeline(e.targets, map[string]string{"cache": stampedeCache}, time.Second)
	tl.SetSegment(p.Name)
	r := &loadgen.Runner{
		Rate:        cfg.Rate,
		Duration:    s.phaseDuration,
		MaxRequests: cfg.MaxRequests,
		MaxInFlight: cfg.MaxInFlight,
		Do:          hotKeyReads(e.targets, hk.Keys),
		OnResult: func(res loadgen.Result) {
			e.observe(s.Name(), res)
			e.slowest.Record(p.Name, res)
			tl.Record(res)
			if !res.Dropped && res.Seq >= warmSeq {
				warm.Record(res.Latency)
			}
		},
	}
	rs, err := loadgen.RunSampled(ctx, r, tl)
	if err != nil {
		return PhaseSummary{}, nil, 0, err
	}
	inc := tl.Increase() // the phase's counters, summed over the targets
	delta := inc.Sum
	elapsed := rs.End.Sub(rs.Start)
	ps := PhaseSummary{
		Name: p.Name, Strategy: p.Strategy, Beta: p.Beta,
		Start: rs.Start.UTC(), End: rs.End.UTC(),
		// The schedule's length, not the tail of the last request.
		Windows:  s.phaseDuration.Seconds() / hk.CacheTTL.Seconds(),
		Requests: rs.Completed, Errors: rs.Failed, Dropped: rs.Dropped,
		RecomputesByReason: map[string]float64{},
		GetsByResult:       map[string]float64{},
		Latency:            tl.SegmentLatency(p.Name),
		AfterWarmup:        loadgen.LatencyOf(warm),
		Timeline:           tl.Points(),
	}
	if cfg.MaxRequests > 0 {
		if d := float64(cfg.MaxRequests) / cfg.Rate; d < s.phaseDuration.Seconds() {
			ps.Windows = d / hk.CacheTTL.Seconds()
		}
	}
	if rs.Scheduled > 0 {
		ps.ErrorRate = float64(rs.Failed+rs.Dropped) / float64(rs.Scheduled)
	}
	if elapsed > 0 {
		ps.RPS = float64(rs.Completed) / elapsed.Seconds()
	}
	cache := map[string]string{"cache": stampedeCache}
	ps.Recomputes = delta("cachex_recomputes_total", cache)
	for _, reason := range recomputeReasons {
		ps.RecomputesByReason[reason] = delta("cachex_recomputes_total", map[string]string{"cache": stampedeCache, "reason": reason})
	}
	ps.RecomputeErrors = delta("cachex_recomputes_total", map[string]string{"cache": stampedeCache, "status": "error"})
	ps.Duplicates = delta("cachex_recomputes_discarded_total", cache)
	if ps.Windows > 0 {
		ps.RecomputesPerKeyWindow = ps.Recomputes / (float64(hk.Keys) * ps.Windows)
		ps.DuplicatesPerKeyWindow = ps.Duplicates / (float64(hk.Keys) * ps.Windows)
	}
	ps.Gets = delta("cachex_gets_total", cache)
	for _, result := range getResults {
		ps.GetsByResult[result] = delta("cachex_gets_total", map[string]string{"cache": stampedeCache, "result": result})
	}
	if ps.Gets > 0 {
		ps.HitRatio = (ps.GetsByResult["hit"] + ps.GetsByResult["early_refresh"] + ps.GetsByResult["stale"]) / ps.Gets
	}
	ps.EarlyRefreshes = ps.GetsByResult["early_refresh"]
	if n := delta("cachex_refresh_lead_seconds_count", cache); n > 0 {
		ps.MeanLeadMs = 1000 * delta("cachex_refresh_lead_seconds_sum", cache) / n
	}
	for _, pt := range ps.Timeline {
		ps.ScrapeErrors += pt.ScrapeErrors
	}
	return ps, inc, rs.Scheduled, nil
}
