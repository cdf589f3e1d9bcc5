package loadgen

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// Point is one interval (normally a second) of a run: what the clients saw
// and, from a scrape of the API at the interval's end, what the server did.
type Point struct {
	// T is the interval's end in seconds since the timeline started.
	T       float64 `json:"t_seconds"`
	Segment string  `json:"segment,omitempty"`
	// Client side: requests finished in the interval, by outcome (the
	// Outcome's Class, or its Code), and their latency from the scheduled
	// start.
	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	Codes    map[string]int64 `json:"codes,omitempty"`
	P50Ms    float64          `json:"p50_ms"`
	P99Ms    float64          `json:"p99_ms"`
	MaxMs    float64          `json:"max_ms"`
	// Server side (deltas of the summed /metrics counters; zero when the
	// scrape failed, see ScrapeFailed): recomputes and gets of the watched
	// caches, and database queries of any kind.
	Recomputes   float64 `json:"recomputes"`
	Gets         float64 `json:"gets"`
	Served       float64 `json:"served_from_cache"` // hit + early_refresh + stale
	DBQueries    float64 `json:"db_queries"`
	ScrapeFailed bool    `json:"scrape_failed,omitempty"`
}

// HitRatio is Served/Gets, NaN for an interval without gets (a gap in a
// chart, not a zero).
func (p Point) HitRatio() float64 {
	if p.Gets == 0 {
		return math.NaN()
	}
	return p.Served / p.Gets
}

// Timeline samples a run once per interval into Points. Record is called
// for every result (safe for concurrent use); run does the sampling.
type Timeline struct {
	targets  Targets
	cache    map[string]string // label filter of the cachex series watched; nil: every cache
	interval time.Duration
	cuts     chan cut      // SetSegment -> run: close the interval now
	stopped  chan struct{} // closed when run returns

	mu        sync.Mutex
	running   bool
	segment   string
	win       *Histogram
	reqs      int64
	errs      int64
	codes     map[string]int64
	points    []Point
	bySegment map[string]*Histogram // every latency, per segment
}

// NewTimeline returns a timeline over targets that watches the caches
// matching cache (nil: all).
func NewTimeline(targets Targets, cache map[string]string, interval time.Duration) *Timeline {
	return &Timeline{targets: targets, cache: cache, interval: interval,
		cuts: make(chan cut), stopped: make(chan struct{}),
		win: NewHistogram(), codes: map[string]int64{}, bySegment: map[string]*Histogram{}}
}

// cut asks run to close the current interval and start segment s.
type cut struct {
	segment string
	done    chan struct{}
}

// SetSegment names the part of the run the following results and points
// belong to ("before", "outage", ...). While run samples, it first closes
// the current interval, so no point straddles two segments.
func (tl *Timeline) SetSegment(s string) {
	tl.mu.Lock()
	running := tl.running
	if !running {
		tl.segment = s
	}
	tl.mu.Unlock()
	if !running {
		return
	}
	c := cut{segment: s, done: make(chan struct{})}
	select {
	case tl.cuts <- c:
		<-c.done
	case <-tl.stopped:
		tl.mu.Lock()
		tl.segment = s
		tl.mu.Unlock()
	}
}

// Record adds a finished (not dropped) result to the current interval.
func (tl *Timeline) Record(res Result) {
	if res.Dropped {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.reqs++
	if res.Err != nil {
		tl.errs++
	}
	class := res.Class
	if class == "" {
		class = orDash(res.Code)
	}
	tl.codes[class]++
	tl.win.Record(res.Latency)
	h := tl.bySegment[tl.segment]
	if h == nil {
		h = NewHistogram()
		tl.bySegment[tl.segment] = h
	}
	h.Record(res.Latency)
}

// SegmentLatency returns the latency of every result recorded while seg
// was the segment.
func (tl *Timeline) SegmentLatency(seg string) LatencySummary {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if h := tl.bySegment[seg]; h != nil {
		return LatencyOf(h)
	}
	return LatencySummary{}
}

// Points returns the points sampled so far.
func (tl *Timeline) Points() []Point {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]Point(nil), tl.points...)
}

// run samples every interval until ctx ends, then takes a last sample so
// the tail of the run is not lost. The first scrape is the baseline.
func (tl *Timeline) run(ctx context.Context) {
	defer close(tl.stopped)
	start := time.Now()
	prev, _ := tl.targets.Scrape(ctx)
	tl.mu.Lock()
	tl.running = true
	tl.mu.Unlock()
	t := time.NewTicker(tl.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			prev = tl.sample(ctx, start, prev)
		case c := <-tl.cuts:
			prev = tl.sample(ctx, start, prev)
			tl.mu.Lock()
			tl.segment = c.segment
			tl.mu.Unlock()
			t.Reset(tl.interval)
			close(c.done)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			tl.sample(sctx, start, prev)
			cancel()
			return
		}
	}
}

// sample closes the current interval: it scrapes the targets, appends a
// Point with the client figures and the counter deltas since prev, and
// returns the new baseline (prev again when the scrape failed, so the next
// point covers both intervals).
func (tl *Timeline) sample(ctx context.Context, start time.Time, prev scrape.Samples) scrape.Samples {
	cur, err := tl.targets.Scrape(ctx)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

	tl.mu.Lock()
	defer tl.mu.Unlock()
	p := Point{
		T: time.Since(start).Seconds(), Segment: tl.segment,
		Requests: tl.reqs, Errors: tl.errs, Codes: tl.codes,
		P50Ms: ms(tl.win.Percentile(50)), P99Ms: ms(tl.win.Percentile(99)), MaxMs: ms(tl.win.Max()),
	}
	tl.reqs, tl.errs, tl.codes, tl.win = 0, 0, map[string]int64{}, NewHistogram()
	if err != nil || prev == nil {
		p.ScrapeFailed = true
		tl.points = append(tl.points, p)
		if prev == nil {
			return cur
		}
		return prev
	}
	delta := func(name string, labels map[string]string) float64 {
		return cur.Sum(name, labels) - prev.Sum(name, labels)
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range tl.cache {
			m[a] = b
		}
		return m
	}
	p.Recomputes = delta("cachex_recomputes_total", tl.cache)
	p.Gets = delta("cachex_gets_total", tl.cache)
	for _, r := range []string{"hit", "early_refresh", "stale"} {
		p.Served += delta("cachex_gets_total", with("result", r))
	}
	p.DBQueries = delta("catalog_db_query_duration_seconds_count", nil)
	tl.points = append(tl.points, p)
	return cur
}

// RunSampled runs r while tl samples, and returns when both have stopped.
func RunSampled(ctx context.Context, r *Runner, tl *Timeline) (Summary, error) {
	tlCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); tl.run(tlCtx) }()
	rs, err := r.Run(ctx)
	stop()
	<-done
	return rs, err
}
