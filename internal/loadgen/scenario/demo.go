package scenario

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// Demo is the endless mix compose runs: browsing, reservations and
// cancellations, and a stampede burst every -burst-every.
type Demo struct {
	cfg          *Config
	categoryRate float64
	categories   int
	reserveRate  float64
	burstEvery   time.Duration
	burstFor     time.Duration
	burstRate    float64
}

// Name is "demo".
func (*Demo) Name() string { return "demo" }

// Usage is demo's paragraph of -h.
func (*Demo) Usage() string {
	return `the endless mix compose runs: browse at -rate, category pages at
-demo-category-rate, reservations and cancellations at -demo-reserve-rate, and every -burst-every a
stampede burst of -burst-rate for -burst-for on the hot categories,
cycling through -phases. Runs until stopped when -duration is 0.`
}

func (d *Demo) register(fs *flag.FlagSet) {
	fs.Float64Var(&d.categoryRate, "demo-category-rate", 4,
		"demo: requests per second of category pages, top lists and statistics in turn, of the categories after the -hot-keys ones (so every cache is read between bursts; 0: off)")
	fs.IntVar(&d.categories, "categories", 40,
		"demo: category ids 1..N the catalog has (40 at any seed scale from 0.0016 up)")
	fs.Float64Var(&d.reserveRate, "demo-reserve-rate", 5,
		"demo: reservation requests per second on -skus (half reserve one unit, half cancel the oldest open reservation, so stock keeps flowing)")
	fs.DurationVar(&d.burstEvery, "burst-every", 3*time.Minute,
		"demo: time between the starts of stampede bursts")
	fs.DurationVar(&d.burstFor, "burst-for", 40*time.Second,
		"demo: length of a stampede burst on the -hot-keys categories; each burst switches category_stats to the next -phases strategy")
	fs.Float64Var(&d.burstRate, "burst-rate", 200,
		"demo: requests per second of a stampede burst")
}

func (d *Demo) check() error {
	switch {
	case d.categoryRate != 0 && !validRate(d.categoryRate):
		return fmt.Errorf("-demo-category-rate must be 0 (off) or in [%g, %g], got %v", loadgen.MinRate, loadgen.MaxRate, d.categoryRate)
	case d.categoryRate != 0 && d.categories <= d.cfg.HotKeys.Keys:
		return fmt.Errorf("-categories (%d) must exceed -hot-keys (%d): the category traffic reads the others", d.categories, d.cfg.HotKeys.Keys)
	case d.reserveRate != 0 && !validRate(d.reserveRate):
		return fmt.Errorf("-demo-reserve-rate must be 0 (off) or in [%g, %g], got %v", loadgen.MinRate, loadgen.MaxRate, d.reserveRate)
	case d.burstEvery <= 0 || d.burstFor <= 0 || d.burstFor > d.burstEvery:
		return fmt.Errorf("-burst-for (%v) must be > 0 and at most -burst-every (%v)", d.burstFor, d.burstEvery)
	case !validRate(d.burstRate):
		return fmt.Errorf("-burst-rate must be in [%g, %g], got %v", loadgen.MinRate, loadgen.MaxRate, d.burstRate)
	}
	return d.cfg.needAdmin("demo")
}

// Run runs the endless mix until ctx ends or -duration passes: browsing at
// -rate, reservations and cancellations at -demo-reserve-rate, and a
// stampede burst every -burst-every, each an open-model schedule of its own.
// POST /demo/pause on loadgen's -metrics-addr stops all of it (and cancels
// the demo's open holds) until POST /demo/resume, so an experiment can run
// against the same API undisturbed; GET /demo says which. A failed admin
// call or request is logged and counted, never fatal: the demo keeps going
// while replicas restart. It prints the per-series figures when it stops.
func (d *Demo) Run(ctx context.Context, e *Env) error {
	if dur := e.cfg.Duration; dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dur)
		defer cancel()
	}
	g, err := newGate(e)
	if err != nil {
		return err
	}
	rv := &reserver{skus: e.cfg.Reserve.SKUs}
	b := newBrowser(e.cfg.Mix, uint64(time.Now().UnixNano()))
	burst := 0 // the next -phases strategy, kept across pauses
	for g.running(ctx) {
		runCtx, stop := context.WithCancel(ctx)
		e.stats.SetPhase("steady")
		var wg sync.WaitGroup
		wg.Go(func() {
			forever(runCtx, e.cfg.Rate, e.cfg.MaxInFlight, func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
				endpoint, path := b.next()
				return e.targets.Pick(req.Seq).Get(ctx, endpoint, path, nil)
			}, func(res loadgen.Result) { e.observe("browse", res) })
		})
		if d.categoryRate > 0 {
			read := d.categoryReads(e)
			wg.Go(func() {
				forever(runCtx, d.categoryRate, e.cfg.MaxInFlight, read, func(res loadgen.Result) { e.observe("browse", res) })
			})
		}
		if d.reserveRate > 0 {
			wg.Go(func() {
				forever(runCtx, d.reserveRate, e.cfg.MaxInFlight, func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
					return rv.do(ctx, e.targets.Pick(req.Seq), req.Seq)
				}, func(res loadgen.Result) { e.observe("reserve", res) })
			})
		}
		wg.Go(func() { burst = d.bursts(runCtx, e, burst) })
		g.untilPaused(ctx)
		stop()
		wg.Wait()
		rv.release(ctx, e)
		g.settled()
		if ctx.Err() == nil {
			e.stats.SetPhase("paused")
			fmt.Fprintln(e.stderr, "loadgen: demo paused (POST /demo/resume to go on)")
		}
	}
	keys, series := e.stats.Series()
	fmt.Fprintf(e.stdout, "%-10s %-16s %-9s %9s %9s %9s\n", "scenario", "endpoint", "code", "requests", "p50ms", "p99ms")
	for i, k := range keys {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		fmt.Fprintf(e.stdout, "%-10s %-16s %-9s %9d %9.2f %9.2f\n", k.Scenario, k.Endpoint, k.Code, series[i].Requests,
			ms(series[i].Latency.Percentile(50)), ms(series[i].Latency.Percentile(99)))
	}
	if n := rv.openCount(); n > 0 {
		return fmt.Errorf("%d demo reservations could not be cancelled or settled (they expire with their hold)", n)
	}
	return nil
}

// categoryReads returns the Do of the category traffic: the top list, then
// the statistics, of each category after the hot ones in turn.
func (d *Demo) categoryReads(e *Env) func(context.Context, loadgen.Request) loadgen.Outcome {
	first, n := int64(e.cfg.HotKeys.Keys+1), int64(d.categories-e.cfg.HotKeys.Keys)
	return func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
		c := first + (req.Seq/2)%n
		if req.Seq%2 == 0 {
			return e.targets.Pick(req.Seq).Get(ctx, "top_products", fmt.Sprintf("/v1/categories/%d/top?limit=10", c), nil)
		}
		return e.targets.Pick(req.Seq).Get(ctx, stampedeEndpoint, fmt.Sprintf("/v1/categories/%d/stats", c), nil)
	}
}

// forever runs one open-model schedule at rate until ctx ends. Requests in
// flight then finish (bounded by the client timeout) instead of being cut
// off and counted as timeouts.
func forever(ctx context.Context, rate float64, maxInFlight int, do func(context.Context, loadgen.Request) loadgen.Outcome, onResult func(loadgen.Result)) {
	r := &loadgen.Runner{Rate: rate, UntilCanceled: true, MaxInFlight: maxInFlight, OnResult: onResult,
		Do: func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			return do(context.WithoutCancel(ctx), req)
		}}
	_, _ = r.Run(ctx) // the only errors are ctx's and configuration ones validated earlier
}

// bursts waits -burst-every minus -burst-for, then drives a stampede burst
// with the next -phases strategy (next is its index), until ctx ends; it
// returns the index of the strategy after the last burst.
func (d *Demo) bursts(ctx context.Context, e *Env, next int) int {
	hk := e.cfg.HotKeys
	read := hotKeyReads(e.targets, hk.Keys)
	for {
		select {
		case <-ctx.Done():
			return next
		case <-time.After(d.burstEvery - d.burstFor):
		}
		p := hk.Phases[next%len(hk.Phases)]
		next++
		if err := p.apply(ctx, e.targets, e.cfg.AdminToken); err != nil && ctx.Err() == nil {
			fmt.Fprintln(e.stderr, "loadgen: burst: set strategy:", err)
		}
		e.stats.SetPhase("burst " + p.Name)
		r := &loadgen.Runner{Rate: d.burstRate, Duration: d.burstFor, MaxInFlight: e.cfg.MaxInFlight,
			Do: func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
				return read(context.WithoutCancel(ctx), req)
			},
			OnResult: func(res loadgen.Result) { e.observe("stampede", res) },
		}
		_, _ = r.Run(ctx)
		e.stats.SetPhase("steady")
	}
}

// release settles the reservations whose answer was lost (by replaying
// their idempotency key) and cancels every reservation rv holds, retrying
// failures for up to releaseFor, so a paused or stopped demo (or a finished
// capacity ramp) leaves no hold behind.
func (rv *reserver) release(ctx context.Context, e *Env) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseFor)
	defer cancel()
	for seq := int64(0); rv.openCount() > 0 && ctx.Err() == nil; seq++ {
		c := e.targets.Pick(seq)
		out := rv.settleOldest(ctx, c)
		if out.Endpoint == "" {
			out = rv.cancelOldest(ctx, c)
		}
		e.observe("reserve", loadgen.Result{Outcome: out})
		if out.Err != nil {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
}

// releaseFor bounds how long a pausing or stopping demo retries the
// cancellation of its holds; what is left expires with the hold TTL.
const releaseFor = 30 * time.Second

// reserver is demo's reservation traffic: it reserves one unit of a random
// SKU, or cancels the oldest reservation it made, so the SKUs' stock is
// reserved and released in turn and never runs out for good. A cancel that
// fails is retried later. Safe for concurrent use.
type reserver struct {
	skus    []int64
	mu      sync.Mutex
	open    []int64          // ids of reservations made and not yet cancelled, oldest first
	unknown []map[string]any // bodies of reservations whose answer was lost
}

// do sends request seq: even ones reserve, odd ones cancel when there is a
// reservation to cancel.
func (rv *reserver) do(ctx context.Context, c *loadgen.Client, seq int64) loadgen.Outcome {
	rv.mu.Lock()
	canCancel := len(rv.open) > 0
	rv.mu.Unlock()
	if seq%2 == 1 && canCancel {
		return rv.cancelOldest(ctx, c)
	}
	body := map[string]any{
		"product_id":      rv.skus[rand.IntN(len(rv.skus))],
		"quantity":        1,
		"idempotency_key": fmt.Sprintf("demo-%d-%d", time.Now().UnixNano(), seq),
	}
	out, data := c.PostJSON(ctx, reserveEndpoint, "/v1/reservations", body, nil, loadgen.Expect(http.StatusConflict))
	rv.record(body, out, data)
	return out
}

// record keeps a reservation's id when it was made, and its body when the
// answer does not say (a transport error, 5xx other than busy).
func (rv *reserver) record(body map[string]any, out loadgen.Outcome, data []byte) {
	var answer struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &answer)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	switch {
	case (out.Code == "201" || out.Code == "200") && answer.ID != 0:
		rv.open = append(rv.open, answer.ID)
	case out.Code == "409" || (out.Code == "503" && answer.Type == problemBusy):
	case out.Err != nil || strings.HasPrefix(out.Code, "5"):
		rv.unknown = append(rv.unknown, body)
	}
}

// settleOldest replays the oldest reservation whose answer was lost; its
// Outcome has no Endpoint when there is none.
func (rv *reserver) settleOldest(ctx context.Context, c *loadgen.Client) loadgen.Outcome {
	rv.mu.Lock()
	if len(rv.unknown) == 0 {
		rv.mu.Unlock()
		return loadgen.Outcome{}
	}
	body := rv.unknown[0]
	rv.unknown = rv.unknown[1:]
	rv.mu.Unlock()
	out, data := c.PostJSON(ctx, "reconcile", "/v1/reservations", body, nil, loadgen.Expect(http.StatusConflict))
	rv.record(body, out, data)
	return out
}

// cancelOldest cancels the oldest open reservation. 200 and 409 (already
// cancelled or expired) settle it; any other answer puts it back to be
// tried again.
func (rv *reserver) cancelOldest(ctx context.Context, c *loadgen.Client) loadgen.Outcome {
	rv.mu.Lock()
	if len(rv.open) == 0 {
		rv.mu.Unlock()
		return loadgen.Outcome{Endpoint: "cancel", Code: "-"}
	}
	id := rv.open[0]
	rv.open = rv.open[1:]
	rv.mu.Unlock()
	out, _ := c.PostJSON(ctx, "cancel", fmt.Sprintf("/v1/reservations/%d/cancel", id), map[string]any{}, nil, loadgen.Expect(http.StatusConflict))
	if out.Err != nil {
		rv.mu.Lock()
		rv.open = append(rv.open, id)
		rv.mu.Unlock()
	}
	return out
}

// openCount is the number of reservations not yet cancelled or settled.
func (rv *reserver) openCount() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return len(rv.open) + len(rv.unknown)
}
