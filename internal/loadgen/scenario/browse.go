package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
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

// Browse drives the browsing mix at -rate for -duration, optionally with a
// simulated outage of the cache's Redis.
type Browse struct {
	cfg       *Config
	outageAt  time.Duration
	outageFor time.Duration
}

// Name is "browse".
func (*Browse) Name() string { return "browse" }

// Usage is browse's paragraph of -h.
func (*Browse) Usage() string {
	return `Zipf-distributed product reads, batch reads and searches for
-duration; with -outage-for, the cache's Redis is made unavailable
(admin fault knob) from -outage-at on, and the report shows reads,
database load and hit ratio before, during and after.`
}

func (b *Browse) register(fs *flag.FlagSet) {
	fs.DurationVar(&b.outageAt, "outage-at", 0,
		"browse: when -outage-for > 0, how far into the run the cache's Redis is made unavailable (admin fault knob cache_redis_down_percent=100)")
	fs.DurationVar(&b.outageFor, "outage-for", 0,
		"browse: how long the simulated cache Redis outage lasts (default 0: no outage); needs -admin-token")
}

func (b *Browse) check() error {
	if b.outageAt < 0 || b.outageFor < 0 {
		return errors.New("-outage-at and -outage-for must be >= 0")
	}
	if b.outageFor > 0 {
		if err := b.cfg.needAdmin("browse with -outage-for"); err != nil {
			return err
		}
	}
	return b.cfg.bounded()
}

// browser picks browse requests: Zipf-distributed product ids and search
// terms. It is safe for concurrent use.
type browser struct {
	cfg      Mix
	mu       sync.Mutex
	products *rand.Zipf
	terms    *rand.Zipf
	r        *rand.Rand
}

// newBrowser returns a browser seeded from seed (runs with the same seed
// ask for the same sequence).
func newBrowser(cfg Mix, seed uint64) *browser {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &browser{
		cfg:      cfg,
		r:        r,
		products: rand.NewZipf(r, cfg.ZipfS, 1, uint64(cfg.Products-1)),
		terms:    rand.NewZipf(r, cfg.ZipfS, 1, uint64(len(searchTerms)-1)),
	}
}

// next returns the endpoint and path of the next request.
func (b *browser) next() (endpoint, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	x := b.r.Float64() * 100
	switch {
	case x < b.cfg.SearchPercent:
		endpoint = endpointSearch
	case x < b.cfg.SearchPercent+b.cfg.BatchPercent:
		endpoint = endpointProducts
	default:
		endpoint = endpointProduct
	}
	return endpoint, b.pathLocked(endpoint)
}

// path returns the path of the next request to endpoint, one of the
// browse endpoints, whatever the mix's shares (capacity reads one endpoint
// at a time).
func (b *browser) path(endpoint string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pathLocked(endpoint)
}

// pathLocked is path; b.mu is held.
func (b *browser) pathLocked(endpoint string) string {
	switch endpoint {
	case endpointSearch:
		return "/v1/search?limit=20&q=" + searchTerms[b.terms.Uint64()]
	case endpointProducts:
		ids := make([]string, b.cfg.BatchSize)
		for i := range ids {
			ids[i] = strconv.FormatUint(1+b.products.Uint64(), 10)
		}
		return "/v1/products?ids=" + strings.Join(ids, ",")
	}
	return "/v1/products/" + strconv.FormatUint(1+b.products.Uint64(), 10)
}

// Run drives the browse mix at -rate for -duration, optionally with
// a simulated cache Redis outage, then writes the report. It fails when the
// error rate passes -max-error-rate.
func (bs *Browse) Run(ctx context.Context, e *Env) (err error) {
	cfg, mix := e.cfg, e.cfg.Mix
	sum := &BrowseSummary{
		Load: newLoad(bs.Name(), e), Seconds: cfg.Duration.Seconds(),
		Products: mix.Products, ZipfS: mix.ZipfS, BatchPercent: mix.BatchPercent, SearchPercent: mix.SearchPercent,
		BatchSize: mix.BatchSize, Verdict: Verdict{MaxErrorRate: cfg.MaxErrorRate},
		Endpoints: map[string]*EndpointSummary{},
	}
	tl := loadgen.NewTimeline(e.targets, nil, time.Second)
	var phase atomic.Pointer[string] // the segment, the slowest requests' phase
	segment := func(s string) { tl.SetSegment(s); phase.Store(&s); e.stats.SetPhase(bs.Name() + " " + s) }
	segment("steady")
	if bs.outageFor > 0 {
		sum.OutageAtSeconds, sum.OutageForSeconds = bs.outageAt.Seconds(), bs.outageFor.Seconds()
		segment("before")
		defer func() { err = errors.Join(err, resetFaults(e)) }()
		octx, stopOutage := context.WithCancel(ctx)
		defer stopOutage()
		outageErr := make(chan error, 1)
		go func() { outageErr <- bs.simulateOutage(octx, e, segment) }()
		defer func() {
			stopOutage()
			err = errors.Join(err, <-outageErr)
		}()
	}

	b := newBrowser(mix, uint64(time.Now().UnixNano()))
	var mu sync.Mutex
	hists := map[string]*loadgen.Histogram{}
	r := &loadgen.Runner{
		Rate: cfg.Rate, Duration: cfg.Duration, MaxRequests: cfg.MaxRequests, MaxInFlight: cfg.MaxInFlight,
		Do: func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			endpoint, path := b.next()
			return e.targets.Pick(req.Seq).Get(ctx, endpoint, path, nil)
		},
		OnResult: func(res loadgen.Result) {
			e.observe(bs.Name(), res)
			e.slowest.Record(*phase.Load(), res)
			tl.Record(res)
			mu.Lock()
			defer mu.Unlock()
			sum.count(res, hists)
		},
	}
	rs, err := loadgen.RunSampled(ctx, r, tl)
	if err != nil {
		return err
	}
	sum.finish(rs, hists, tl)
	return e.conclude(ctx, bs.Name(), sum, &sum.Verdict, &sum.Load)
}

// simulateOutage turns the cache Redis fault knob on at -outage-at and off
// -outage-for later (or when ctx ends), naming the timeline's segments.
func (bs *Browse) simulateOutage(ctx context.Context, e *Env, segment func(string)) error {
	token := e.cfg.AdminToken
	select {
	case <-time.After(bs.outageAt):
	case <-ctx.Done():
		return nil
	}
	if err := e.targets.AdminPut(ctx, "/admin/faults", token, map[string]int{"cache_redis_down_percent": 100}); err != nil {
		return fmt.Errorf("start the outage: %w", err)
	}
	segment("outage")
	select {
	case <-time.After(bs.outageFor):
	case <-ctx.Done():
		return nil // the deferred resetFaults ends it
	}
	if err := e.targets.AdminPut(ctx, "/admin/faults", token, map[string]int{}); err != nil {
		return fmt.Errorf("end the outage: %w", err)
	}
	segment("after")
	return nil
}
