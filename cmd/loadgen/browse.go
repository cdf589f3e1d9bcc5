package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Browse scenario defaults, also shown by -h.
const (
	browseScenario       = "browse"
	defaultProducts      = 25000 // products at seed scale 1
	defaultZipfS         = 1.1
	defaultBatchPercent  = 10.0
	defaultSearchPercent = 10.0
	defaultBatchSize     = 20
)

// Browse endpoints (the endpoint label of loadgen's metrics).
const (
	endpointProduct  = "product"
	endpointProducts = "products_batch"
	endpointSearch   = "search"
)

// searchTerms are words of the seeded product names (internal/seed), most
// popular first: searches pick them Zipf-distributed, as people repeat
// popular queries.
var searchTerms = [...]string{
	"lamp", "mug", "tent", "linen", "oak", "towel", "chair", "bowl", "knife", "helmet",
	"pillow", "shoe", "planter", "jacket", "mat", "walnut", "ceramic", "cotton", "steel", "bamboo",
	"lantern", "skillet", "quilt", "rake", "saddle", "kettlebell", "hammock", "teapot", "merino", "brass",
}

// browseConfig is the part of the command line only browse (and demo's
// browsing traffic) uses.
type browseConfig struct {
	products      int
	zipfS         float64
	batchPercent  float64
	searchPercent float64
	batchSize     int
	outageAt      time.Duration
	outageFor     time.Duration
}

// registerBrowseFlags adds the browse flags to fs, storing into c.
func registerBrowseFlags(fs *flag.FlagSet, c *browseConfig) {
	fs.IntVar(&c.products, "products", defaultProducts,
		"browse: product ids 1..N to read (25,000 at seed scale 1)")
	fs.Float64Var(&c.zipfS, "zipf-s", defaultZipfS,
		"browse: Zipf exponent (> 1) of product and search popularity; larger is more skewed")
	fs.Float64Var(&c.batchPercent, "batch-percent", defaultBatchPercent,
		"browse: share of requests (0..100) that read -batch-size products in one GET /v1/products?ids=")
	fs.Float64Var(&c.searchPercent, "search-percent", defaultSearchPercent,
		"browse: share of requests (0..100) that search; the rest read one product")
	fs.IntVar(&c.batchSize, "batch-size", defaultBatchSize,
		"browse: ids per batch read (1..100)")
	fs.DurationVar(&c.outageAt, "outage-at", 0,
		"browse: when -outage-for > 0, how far into the run the cache's Redis is made unavailable (admin fault knob cache_redis_down_percent=100)")
	fs.DurationVar(&c.outageFor, "outage-for", 0,
		"browse: how long the simulated cache Redis outage lasts (default 0: no outage); needs -admin-token")
}

// validate checks the browse flags.
func (c *browseConfig) validate() error {
	switch {
	case c.products < 1:
		return fmt.Errorf("-products must be >= 1, got %d", c.products)
	case !(c.zipfS > 1) || math.IsInf(c.zipfS, 0):
		return fmt.Errorf("-zipf-s must be > 1, got %v", c.zipfS)
	case !(c.batchPercent >= 0 && c.searchPercent >= 0 && c.batchPercent+c.searchPercent <= 100):
		return fmt.Errorf("-batch-percent and -search-percent must be >= 0 and add up to at most 100, got %v and %v", c.batchPercent, c.searchPercent)
	case c.batchSize < 1 || c.batchSize > 100:
		return fmt.Errorf("-batch-size must be in [1, 100], got %d", c.batchSize)
	case c.outageAt < 0 || c.outageFor < 0:
		return errors.New("-outage-at and -outage-for must be >= 0")
	}
	return nil
}

// browser picks browse requests: Zipf-distributed product ids and search
// terms. It is safe for concurrent use.
type browser struct {
	cfg      browseConfig
	mu       sync.Mutex
	products *rand.Zipf
	terms    *rand.Zipf
	r        *rand.Rand
}

// newBrowser returns a browser seeded from seed (runs with the same seed
// ask for the same sequence).
func newBrowser(cfg browseConfig, seed uint64) *browser {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &browser{
		cfg:      cfg,
		r:        r,
		products: rand.NewZipf(r, cfg.zipfS, 1, uint64(cfg.products-1)),
		terms:    rand.NewZipf(r, cfg.zipfS, 1, uint64(len(searchTerms)-1)),
	}
}

// next returns the endpoint and path of the next request.
func (b *browser) next() (endpoint, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	x := b.r.Float64() * 100
	switch {
	case x < b.cfg.searchPercent:
		return endpointSearch, "/v1/search?limit=20&q=" + searchTerms[b.terms.Uint64()]
	case x < b.cfg.searchPercent+b.cfg.batchPercent:
		ids := make([]string, b.cfg.batchSize)
		for i := range ids {
			ids[i] = strconv.FormatUint(1+b.products.Uint64(), 10)
		}
		return endpointProducts, "/v1/products?ids=" + strings.Join(ids, ",")
	}
	return endpointProduct, "/v1/products/" + strconv.FormatUint(1+b.products.Uint64(), 10)
}

// runBrowse drives the browse mix at -rate for -duration, optionally with
// a simulated cache Redis outage, then writes the report. It fails when the
// error rate passes -max-error-rate.
func runBrowse(ctx context.Context, e *env) (err error) {
	cfg, bc := e.cfg, e.cfg.browse
	sum := &BrowseSummary{
		Scenario: browseScenario, Target: e.targets.String(), RateRPS: cfg.rate, Seconds: cfg.duration.Seconds(),
		Products: bc.products, ZipfS: bc.zipfS, BatchPercent: bc.batchPercent, SearchPercent: bc.searchPercent,
		BatchSize: bc.batchSize, MaxErrorRate: cfg.stampede.maxErrorRate, Started: time.Now().UTC(),
		Endpoints: map[string]*EndpointSummary{},
	}
	tl := newTimeline(e.targets, nil, time.Second)
	segment := func(s string) { tl.SetSegment(s); e.stats.SetPhase(browseScenario + " " + s) }
	segment("steady")
	if bc.outageFor > 0 {
		sum.OutageAtSeconds, sum.OutageForSeconds = bc.outageAt.Seconds(), bc.outageFor.Seconds()
		segment("before")
		defer func() { err = errors.Join(err, resetFaults(e)) }()
		octx, stopOutage := context.WithCancel(ctx)
		defer stopOutage()
		outageErr := make(chan error, 1)
		go func() { outageErr <- simulateOutage(octx, e, bc, segment) }()
		defer func() {
			stopOutage()
			err = errors.Join(err, <-outageErr)
		}()
	}

	b := newBrowser(bc, uint64(time.Now().UnixNano()))
	var mu sync.Mutex
	hists := map[string]*Histogram{}
	r := &Runner{
		Rate: cfg.rate, Duration: cfg.duration, MaxRequests: cfg.maxRequests, MaxInFlight: cfg.maxInFlight,
		Do: func(ctx context.Context, req Request) Outcome {
			endpoint, path := b.next()
			return e.targets.Pick(req.Seq).Get(ctx, endpoint, path, nil)
		},
		OnResult: func(res Result) {
			e.observe(browseScenario, res)
			tl.Record(res)
			mu.Lock()
			defer mu.Unlock()
			sum.count(res, hists)
		},
	}
	rs, err := runSampled(ctx, r, tl)
	if err != nil {
		return err
	}
	sum.finish(rs, hists, tl)
	if sum.ErrorRate > sum.MaxErrorRate {
		sum.Failures = append(sum.Failures, fmt.Sprintf("error rate %.4f > %.4f", sum.ErrorRate, sum.MaxErrorRate))
	}
	sum.Passed = len(sum.Failures) == 0
	if err := writeReport(cfg.stampede.reportDir, sum, sum.Report(), e.stdout); err != nil {
		return err
	}
	sum.WriteTable(e.stdout)
	if !sum.Passed {
		return fmt.Errorf("%w: %s", errErrorRate, strings.Join(sum.Failures, "; "))
	}
	return nil
}

// simulateOutage turns the cache Redis fault knob on at -outage-at and off
// -outage-for later (or when ctx ends), naming the timeline's segments.
func simulateOutage(ctx context.Context, e *env, bc browseConfig, segment func(string)) error {
	token := e.cfg.stampede.adminToken
	select {
	case <-time.After(bc.outageAt):
	case <-ctx.Done():
		return nil
	}
	if err := e.targets.AdminPut(ctx, "/admin/faults", token, map[string]int{"cache_redis_down_percent": 100}); err != nil {
		return fmt.Errorf("start the outage: %w", err)
	}
	segment("outage")
	select {
	case <-time.After(bc.outageFor):
	case <-ctx.Done():
		return nil // the deferred resetFaults ends it
	}
	if err := e.targets.AdminPut(ctx, "/admin/faults", token, map[string]int{}); err != nil {
		return fmt.Errorf("end the outage: %w", err)
	}
	segment("after")
	return nil
}
