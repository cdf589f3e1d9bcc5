package loadgen

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// Point is one interval (normally a second) of a run: what the clients saw
// and what the servers did.
type Point struct {
	// T is the interval's end in seconds since the timeline started.
	T       float64 `json:"t_seconds"`
	Segment string  `json:"segment,omitempty"`
	// Client side: requests finished in the interval, by outcome (the
	// Outcome's Class, or its Code), and their latency from the scheduled
	// start (0 when none finished: see Requests).
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// Dropped counts the arrivals dropped in the interval (-max-in-flight
	// reached): scheduled, never sent.
	Dropped int64            `json:"dropped,omitempty"`
	Codes   map[string]int64 `json:"codes,omitempty"`
	P50Ms   float64          `json:"p50_ms"`
	P99Ms   float64          `json:"p99_ms"`
	MaxMs   float64          `json:"max_ms"`
	// Server side, summed over the targets: the increase of the watched
	// caches' recomputes and gets and of the database queries in the
	// interval. A target's counter reset counts from 0; a target that could
	// not be scraped for a while has its increase over the gap spread over
	// the gap's intervals by their length. ScrapeFailed marks intervals
	// some target's figures never arrived for (incomplete, a gap in the
	// charts); ScrapeErrors counts the targets whose scrape at the interval's
	// end failed.
	Recomputes   float64 `json:"recomputes"`
	Gets         float64 `json:"gets"`
	Served       float64 `json:"served_from_cache"` // hit + early_refresh + stale
	DBQueries    float64 `json:"db_queries"`
	ScrapeFailed bool    `json:"scrape_failed,omitempty"`
	ScrapeErrors int     `json:"scrape_errors,omitempty"`
}

// HitRatio is Served/Gets, NaN for an interval without gets (a gap in a
// chart, not a zero).
func (p Point) HitRatio() float64 {
	if p.Gets == 0 {
		return math.NaN()
	}
	return p.Served / p.Gets
}

// Timeline samples a run into Points: Record takes every result (safe for
// concurrent use), Run closes an interval every tick and scrapes every
// target at once, each bounded by half an interval, so a hung target never
// stops the clock; the scrapes at a segment's ends wait longer (up to 5 s),
// so that each segment holds exactly its own counters. Increase is the
// run's server-side totals.
type Timeline struct {
	targets  Targets
	cache    map[string]string // label filter of the cachex series watched; nil: every cache
	interval time.Duration
	cuts     chan cut      // SetSegment -> Run: close the interval now
	stopped  chan struct{} // closed when Run returns

	mu        sync.Mutex
	running   bool
	start     time.Time
	segment   string
	win       *Histogram // the open interval's latencies
	lastWin   *Histogram // the last closed point's, to merge a sliver into it
	reqs      int64
	errs      int64
	drops     int64
	codes     map[string]int64
	points    []Point
	bySegment map[string]*Histogram // every latency, per segment
	last      []targetState         // per target
	total     scrape.Samples        // increase since each target's baseline, summed
}

// targetState is what a target's last successful scrape said, and when.
type targetState struct {
	samples scrape.Samples // nil: no successful scrape yet
	at      float64        // seconds since start
	first   float64        // when the first successful scrape was: nothing before it is counted
}

// cut asks Run to close the current interval and start segment s.
type cut struct {
	segment string
	done    chan struct{}
}

// NewTimeline returns a timeline over targets that watches the caches
// matching cache (nil: all), with a point every interval.
func NewTimeline(targets Targets, cache map[string]string, interval time.Duration) *Timeline {
	return &Timeline{targets: targets, cache: cache, interval: interval,
		cuts: make(chan cut), stopped: make(chan struct{}),
		win: NewHistogram(), codes: map[string]int64{}, bySegment: map[string]*Histogram{},
		last: make([]targetState, len(targets)), total: scrape.Samples{}}
}

// SetSegment names the part of the run the following results and points
// belong to ("before", "outage", ...). While Run samples, it first closes
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

// Record adds a result to the current interval: a dropped arrival to its
// drops, a finished request to its requests and latency.
func (tl *Timeline) Record(res Result) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if res.Dropped {
		tl.drops++
		return
	}
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

// Increase returns how much every counter series grew over the run, summed
// over the targets (see scrape.Increase), from each target's first
// successful scrape to its last.
func (tl *Timeline) Increase() scrape.Samples {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := scrape.Samples{}
	out.Add(tl.total)
	return out
}

// Start takes the baseline scrape; call it before the load starts.
func (tl *Timeline) Start(ctx context.Context) {
	tl.mu.Lock()
	tl.start = time.Now()
	tl.mu.Unlock()
	tl.observe(0, tl.scrape(ctx, boundaryScrapeTimeout))
}

// Run closes an interval every tick until ctx ends, then a last one so the
// tail of the run is not lost. Call Start first.
func (tl *Timeline) Run(ctx context.Context) {
	defer close(tl.stopped)
	tl.mu.Lock()
	tl.running = true
	tl.mu.Unlock()
	t := time.NewTicker(tl.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			tl.sample(ctx, false, tl.tickScrapeTimeout())
		case c := <-tl.cuts:
			if !tl.justStarted() {
				tl.sample(ctx, true, boundaryScrapeTimeout)
			}
			tl.mu.Lock()
			tl.segment = c.segment
			tl.mu.Unlock()
			t.Reset(tl.interval)
			close(c.done)
		case <-ctx.Done():
			tl.sample(context.WithoutCancel(ctx), true, boundaryScrapeTimeout)
			tl.finish()
			return
		}
	}
}

// ScrapeResult is one target's scrape.
type ScrapeResult struct {
	Samples scrape.Samples
	Err     error
}

// boundaryScrapeTimeout bounds the scrapes at a segment's ends (a cut, the
// baseline, the run's end). A segment's figures are exact only if those
// scrapes arrive: one that fails spreads the counters of both sides of the
// boundary over the points around it. So a boundary waits for a slow target
// (an API starved beside other work answered after the tick's half second
// and a segment without hits showed 0.64 of them); a target that needs
// longer than this is taken as hung.
const boundaryScrapeTimeout = 5 * time.Second

// tickScrapeTimeout bounds a tick's scrapes: half the interval, so that a
// hung target never stops the clock.
func (tl *Timeline) tickScrapeTimeout() time.Duration {
	return max(tl.interval/2, 100*time.Millisecond)
}

// scrape reads every target at once, each bounded by timeout.
func (tl *Timeline) scrape(ctx context.Context, timeout time.Duration) []ScrapeResult {
	out := make([]ScrapeResult, len(tl.targets))
	var wg sync.WaitGroup
	for i, c := range tl.targets {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			out[i].Samples, out[i].Err = c.Scrape(sctx)
		})
	}
	wg.Wait()
	return out
}

// sample closes the current interval at now with scrapes bounded by
// timeout: see closeAt.
func (tl *Timeline) sample(ctx context.Context, mayMerge bool, timeout time.Duration) {
	now := time.Since(tl.start).Seconds()
	tl.closeAt(now, mayMerge, tl.scrape(ctx, timeout))
}

// justStarted reports whether no point was closed yet and less than half an
// interval passed: a segment change then only renames the first point,
// whose few milliseconds would otherwise be a sliver.
func (tl *Timeline) justStarted() bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.points) == 0 && time.Since(tl.start) < tl.interval/2
}

// closeAt closes the interval ending at now (seconds since start) with the
// scrapes taken then. When mayMerge (a cut or the last sample), an interval
// shorter than half a tick that belongs to the same segment as the last
// point extends that point, unless it is already 1.5 ticks long, instead
// of making a sliver whose rates would be spikes.
func (tl *Timeline) closeAt(now float64, mayMerge bool, res []ScrapeResult) {
	tl.mu.Lock()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	tick := tl.interval.Seconds()
	prevT, prevLen := 0.0, 0.0
	if n := len(tl.points); n > 0 {
		prevT = tl.points[n-1].T
		prevLen = prevT
		if n > 1 {
			prevLen -= tl.points[n-2].T
		}
	}
	merge := mayMerge && len(tl.points) > 0 && now-prevT < tick/2 &&
		tl.points[len(tl.points)-1].Segment == tl.segment && prevLen < 1.5*tick
	var p *Point
	if merge {
		p = &tl.points[len(tl.points)-1]
		tl.lastWin.Merge(tl.win)
		tl.win = tl.lastWin
		p.Requests += tl.reqs
		p.Errors += tl.errs
		p.Dropped += tl.drops
		for k, v := range tl.codes {
			if p.Codes == nil {
				p.Codes = map[string]int64{}
			}
			p.Codes[k] += v
		}
	} else {
		tl.points = append(tl.points, Point{Segment: tl.segment, Requests: tl.reqs, Errors: tl.errs, Dropped: tl.drops, Codes: tl.codes})
		p = &tl.points[len(tl.points)-1]
	}
	p.T = now
	p.P50Ms, p.P99Ms, p.MaxMs = ms(tl.win.Percentile(50)), ms(tl.win.Percentile(99)), ms(tl.win.Max())
	if !merge {
		p.ScrapeErrors = 0
	}
	for _, r := range res {
		if r.Err != nil {
			p.ScrapeErrors++
		}
	}
	tl.lastWin, tl.win = tl.win, NewHistogram()
	tl.reqs, tl.errs, tl.drops, tl.codes = 0, 0, 0, map[string]int64{}
	tl.mu.Unlock()
	tl.observe(now, res)
}

// observe takes in the scrapes taken at now: each successful one adds its
// increase since the target's last success to the totals and spreads it
// over the points since then.
func (tl *Timeline) observe(now float64, res []ScrapeResult) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i, r := range res {
		if r.Err != nil {
			continue
		}
		st := &tl.last[i]
		if st.samples != nil {
			inc := scrape.Increase(st.samples, r.Samples)
			tl.total.Add(inc)
			tl.spread(st.at, now, tl.watched(inc))
		}
		first := st.first
		if st.samples == nil {
			first = now
		}
		*st = targetState{samples: scrape.Carry(st.samples, r.Samples), at: now, first: first}
	}
}

// watched are the figures a Point holds, from one target's increase.
func (tl *Timeline) watched(inc scrape.Samples) Point {
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range tl.cache {
			m[a] = b
		}
		return m
	}
	p := Point{
		Recomputes: inc.Sum("cachex_recomputes_total", tl.cache),
		Gets:       inc.Sum("cachex_gets_total", tl.cache),
		DBQueries:  inc.Sum("catalog_db_query_duration_seconds_count", nil),
	}
	for _, r := range []string{"hit", "early_refresh", "stale"} {
		p.Served += inc.Sum("cachex_gets_total", with("result", r))
	}
	return p
}

// spread adds w's figures, which grew between from and to, to the points
// covering that span, in proportion to how much of it each covers.
func (tl *Timeline) spread(from, to float64, w Point) {
	if to <= from {
		return
	}
	prevT := 0.0
	for i := range tl.points {
		p := &tl.points[i]
		lo, hi := max(prevT, from), min(p.T, to)
		prevT = p.T
		if hi <= lo {
			continue
		}
		f := (hi - lo) / (to - from)
		p.Recomputes += f * w.Recomputes
		p.Gets += f * w.Gets
		p.Served += f * w.Served
		p.DBQueries += f * w.DBQueries
	}
}

// finish marks the points some target's figures never arrived for.
func (tl *Timeline) finish() {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i := range tl.points {
		for _, st := range tl.last {
			if st.samples == nil || st.at < tl.points[i].T || tl.points[i].T <= st.first {
				tl.points[i].ScrapeFailed = true
			}
		}
	}
}

// RunSampled takes tl's baseline, runs r while tl samples, and returns when
// both have stopped.
func RunSampled(ctx context.Context, r *Runner, tl *Timeline) (Summary, error) {
	tl.Start(ctx)
	tlCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); tl.Run(tlCtx) }()
	rs, err := r.Run(ctx)
	stop()
	<-done
	return rs, err
}
