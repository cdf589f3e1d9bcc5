package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stampede scenario defaults, also shown by -h.
const (
	defaultPhases        = "ttl,xfetch:1"
	defaultPhaseDuration = 30 * time.Second
	defaultHotKeys       = 3
	defaultCacheTTL      = 10 * time.Second // the API's default for category_stats
	defaultReportDir     = "./report"
	defaultMaxErrorRate  = 0.01
	stampedeCache        = "category_stats"
	stampedeScenario     = "stampede"
	stampedeEndpoint     = "category_stats"
)

// Recompute reasons and get results of the cachex metrics (docs/metrics.md).
var (
	recomputeReasons = []string{"miss", "early", "expired"}
	getResults       = []string{"hit", "early_refresh", "miss", "stale", "bypass"}
)

// stampedeConfig is the stampede scenario's part of the command line (demo
// uses -phases and -hot-keys for its bursts) and the flags every scenario
// shares: -admin-token, -report-dir and -max-error-rate.
type stampedeConfig struct {
	phasesRaw     string
	phases        []phase
	phaseDuration time.Duration
	hotKeys       int
	cacheTTL      time.Duration
	warmup        time.Duration
	adminToken    string
	reportDir     string
	maxErrorRate  float64
}

// phase is one strategy setting of the category_stats cache.
type phase struct {
	name     string
	strategy string
	beta     *float64 // nil: leave the cache's beta as it is
}

// registerStampedeFlags adds the stampede flags to fs, storing into c.
// adminDefault is the -admin-token default (from ADMIN_TOKEN).
func registerStampedeFlags(fs *flag.FlagSet, c *stampedeConfig, adminDefault string) {
	fs.StringVar(&c.phasesRaw, "phases", defaultPhases,
		"stampede: comma-separated strategy phases of the category_stats cache, each ttl, none, xfetch or xfetch:BETA (xfetch alone means beta 1)")
	fs.DurationVar(&c.phaseDuration, "phase-duration", defaultPhaseDuration,
		"stampede: how long each phase drives load (make it several -cache-ttl windows)")
	fs.IntVar(&c.hotKeys, "hot-keys", defaultHotKeys,
		"stampede: number of hot categories (ids 1..N, requested round robin)")
	fs.DurationVar(&c.cacheTTL, "cache-ttl", defaultCacheTTL,
		"stampede: the API's category_stats TTL, used to count recomputes per TTL window")
	fs.DurationVar(&c.warmup, "warmup", 0,
		"stampede: start of each phase excluded from the latency_after_warmup figures (default 0: one -cache-ttl)")
	fs.StringVar(&c.adminToken, "admin-token", adminDefault,
		"bearer token of the API's /admin endpoints, needed to switch cache strategies and fault knobs (stampede, demo, browse -outage-for, reserve -pause-percent) (env ADMIN_TOKEN)")
	fs.StringVar(&c.reportDir, "report-dir", defaultReportDir,
		"where stampede, browse and reserve write summary.json, report.md and the PNG charts")
	fs.Float64Var(&c.maxErrorRate, "max-error-rate", defaultMaxErrorRate,
		"exit non-zero when (errors + dropped) / scheduled requests exceeds this")
}

// validate checks the stampede flags and parses -phases.
func (c *stampedeConfig) validate() error {
	ps, err := parsePhases(c.phasesRaw)
	if err != nil {
		return err
	}
	c.phases = ps
	if c.warmup == 0 {
		c.warmup = c.cacheTTL
	}
	switch {
	case c.phaseDuration <= 0:
		return fmt.Errorf("-phase-duration must be > 0, got %v", c.phaseDuration)
	case c.hotKeys <= 0:
		return fmt.Errorf("-hot-keys must be > 0, got %d", c.hotKeys)
	case c.cacheTTL <= 0:
		return fmt.Errorf("-cache-ttl must be > 0, got %v", c.cacheTTL)
	case c.warmup < 0:
		return fmt.Errorf("-warmup must be >= 0, got %v", c.warmup)
	case c.maxErrorRate < 0 || c.maxErrorRate > 1 || math.IsNaN(c.maxErrorRate):
		return fmt.Errorf("-max-error-rate must be in [0, 1], got %v", c.maxErrorRate)
	case c.reportDir == "":
		return errors.New("-report-dir is empty")
	}
	return nil
}

// parsePhases parses "ttl,xfetch:1,xfetch:0.5".
func parsePhases(s string) ([]phase, error) {
	var out []phase
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		strategy, betaRaw, hasBeta := strings.Cut(part, ":")
		p := phase{name: part, strategy: strategy}
		switch strategy {
		case "ttl", "none":
			if hasBeta {
				return nil, fmt.Errorf("-phases: %q: only xfetch takes a beta", part)
			}
		case "xfetch":
			beta := 1.0
			if hasBeta {
				b, err := strconv.ParseFloat(betaRaw, 64)
				if err != nil || b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
					return nil, fmt.Errorf("-phases: %q: beta must be a number >= 0", part)
				}
				beta = b
			} else {
				p.name = "xfetch:1"
			}
			p.beta = &beta
		default:
			return nil, fmt.Errorf("-phases: %q: strategy must be ttl, none or xfetch[:beta]", part)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("-phases is empty")
	}
	return out, nil
}

// errErrorRate is returned (wrapped) when the run's error rate passes
// -max-error-rate.
var errErrorRate = errors.New("error rate above -max-error-rate")

// runStampede runs every phase in turn, writes the report (summary.json,
// report.md, charts) and a table to stdout, and returns an error when a phase
// could not run or the error rate passed the threshold (the report is
// written in that case too).
func runStampede(ctx context.Context, e *env) error {
	cfg, sc := e.cfg, e.cfg.stampede
	sum := &StampedeSummary{
		Scenario:        stampedeScenario,
		Target:          e.targets.String(),
		Cache:           stampedeCache,
		RateRPS:         cfg.rate,
		PhaseSeconds:    sc.phaseDuration.Seconds(),
		CacheTTLSeconds: sc.cacheTTL.Seconds(),
		WarmupSeconds:   sc.warmup.Seconds(),
		HotKeys:         sc.hotKeys,
		MaxErrorRate:    sc.maxErrorRate,
		Started:         time.Now().UTC(),
	}
	var scheduled int64
	for _, p := range sc.phases {
		ps, sched, err := runPhase(ctx, e, p)
		if err != nil {
			return fmt.Errorf("phase %s: %w", p.name, err)
		}
		sum.Phases = append(sum.Phases, ps)
		sum.Requests += ps.Requests
		sum.Errors += ps.Errors
		sum.Dropped += ps.Dropped
		scheduled += sched
	}
	sum.Finished = time.Now().UTC()
	if scheduled > 0 {
		sum.ErrorRate = float64(sum.Errors+sum.Dropped) / float64(scheduled)
	}
	if sum.ErrorRate > sc.maxErrorRate {
		sum.Failures = append(sum.Failures, fmt.Sprintf("error rate %.4f > %.4f", sum.ErrorRate, sc.maxErrorRate))
	}
	sum.Passed = len(sum.Failures) == 0
	if err := writeReport(sc.reportDir, sum, sum.Report(), e.stdout); err != nil {
		return err
	}
	sum.WriteTable(e.stdout)
	if !sum.Passed {
		return fmt.Errorf("%w: %s", errErrorRate, strings.Join(sum.Failures, "; "))
	}
	return nil
}

// apply switches the category_stats cache of every target to p.
func (p phase) apply(ctx context.Context, ts Targets, token string) error {
	body := map[string]any{"strategy": p.strategy}
	if p.beta != nil {
		body["beta"] = *p.beta
	}
	return ts.AdminPut(ctx, "/admin/caches/"+stampedeCache, token, body)
}

// hotKeyReads returns a Runner.Do that reads the statistics of categories
// 1..n in turn, spreading the requests over ts.
func hotKeyReads(ts Targets, n int) func(context.Context, Request) Outcome {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("/v1/categories/%d/stats", i+1)
	}
	return func(ctx context.Context, req Request) Outcome {
		return ts.Pick(req.Seq).Get(ctx, stampedeEndpoint, paths[req.Seq%int64(n)], nil)
	}
}

// runPhase switches the cache to p, drives the phase's load and returns its
// figures and the number of scheduled arrivals.
func runPhase(ctx context.Context, e *env, p phase) (PhaseSummary, int64, error) {
	cfg, sc := e.cfg, e.cfg.stampede
	if err := p.apply(ctx, e.targets, sc.adminToken); err != nil {
		return PhaseSummary{}, 0, err
	}
	e.stats.SetPhase(p.name)
	before, err := e.targets.Scrape(ctx)
	if err != nil {
		return PhaseSummary{}, 0, err
	}

	// The timeline keeps the phase's whole latency (its one segment); warm
	// holds the requests scheduled after the warm-up.
	warm := NewHistogram()
	warmSeq := int64(math.Ceil(sc.warmup.Seconds() * cfg.rate))
	tl := newTimeline(e.targets, map[string]string{"cache": stampedeCache}, time.Second)
	tl.SetSegment(p.name)
	r := &Runner{
		Rate:        cfg.rate,
		Duration:    sc.phaseDuration,
		MaxRequests: cfg.maxRequests,
		MaxInFlight: cfg.maxInFlight,
		Do:          hotKeyReads(e.targets, sc.hotKeys),
		OnResult: func(res Result) {
			e.observe(stampedeScenario, res)
			tl.Record(res)
			if !res.Dropped && res.Seq >= warmSeq {
				warm.Record(res.Latency)
			}
		},
	}
	rs, err := runSampled(ctx, r, tl)
	if err != nil {
		return PhaseSummary{}, 0, err
	}
	after, err := e.targets.Scrape(ctx)
	if err != nil {
		return PhaseSummary{}, 0, err
	}

	delta := func(name string, labels map[string]string) float64 {
		return Sum(after, name, labels) - Sum(before, name, labels)
	}
	elapsed := rs.End.Sub(rs.Start)
	ps := PhaseSummary{
		Name: p.name, Strategy: p.strategy, Beta: p.beta,
		Start: rs.Start.UTC(), End: rs.End.UTC(),
		// The schedule's length, not the tail of the last request.
		Windows:  sc.phaseDuration.Seconds() / sc.cacheTTL.Seconds(),
		Requests: rs.Completed, Errors: rs.Failed, Dropped: rs.Dropped,
		RecomputesByReason: map[string]float64{},
		GetsByResult:       map[string]float64{},
		Latency:            tl.SegmentLatency(p.name),
		AfterWarmup:        latencyOf(warm),
		Timeline:           tl.Points(),
	}
	if cfg.maxRequests > 0 {
		if d := float64(cfg.maxRequests) / cfg.rate; d < sc.phaseDuration.Seconds() {
			ps.Windows = d / sc.cacheTTL.Seconds()
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
	if ps.Windows > 0 {
		ps.RecomputesPerKeyWindow = ps.Recomputes / (float64(sc.hotKeys) * ps.Windows)
	}
	ps.Gets = delta("cachex_gets_total", cache)
	for _, result := range getResults {
		ps.GetsByResult[result] = delta("cachex_gets_total", map[string]string{"cache": stampedeCache, "result": result})
	}
	if ps.Gets > 0 {
		ps.HitRatio = (ps.GetsByResult["hit"] + ps.GetsByResult["early_refresh"] + ps.GetsByResult["stale"]) / ps.Gets
	}
	ps.EarlyRefreshes = ps.GetsByResult["early_refresh"]
	return ps, rs.Scheduled, nil
}
