package scenario

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// demoChunk bounds each Runner of the endless mix; the mix restarts its
// schedule every chunk (a Runner must stop by itself).
const demoChunk = time.Minute

// Demo is the endless mix compose runs: browsing, reservations and
// cancellations, and a stampede burst every -burst-every.
type Demo struct {
	cfg         *Config
	reserveRate float64
	burstEvery  time.Duration
	burstFor    time.Duration
	burstRate   float64
}

// Name is "demo".
func (*Demo) Name() string { return "demo" }

// Usage is demo's paragraph of -h.
func (*Demo) Usage() string {
	return `the endless mix compose runs: browse at -rate, reservations and
cancellations at -demo-reserve-rate, and every -burst-every a
stampede burst of -burst-rate for -burst-for on the hot categories,
cycling through -phases. Runs until stopped when -duration is 0.`
}

func (d *Demo) register(fs *flag.FlagSet) {
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
	case !(d.reserveRate >= 0):
		return fmt.Errorf("-demo-reserve-rate must be >= 0, got %v", d.reserveRate)
	case d.burstEvery <= 0 || d.burstFor <= 0 || d.burstFor > d.burstEvery:
		return fmt.Errorf("-burst-for (%v) must be > 0 and at most -burst-every (%v)", d.burstFor, d.burstEvery)
	case !(d.burstRate > 0):
		return fmt.Errorf("-burst-rate must be > 0, got %v", d.burstRate)
	}
	return d.cfg.needAdmin("demo")
}

// Run runs the endless mix until ctx ends or -duration passes: browsing
// at -rate, reservations and cancellations at -demo-reserve-rate, and a
// stampede burst every -burst-every. A failed admin call or request is
// logged and counted, never fatal: the demo keeps going while replicas
// restart. It prints the per-series figures when it stops and writes no
// report.
func (d *Demo) Run(ctx context.Context, e *Env) error {
	if d := e.cfg.Duration; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	e.stats.SetPhase("steady")
	var wg sync.WaitGroup
	b := newBrowser(e.cfg.Mix, uint64(time.Now().UnixNano()))
	wg.Go(func() {
		repeat(ctx, e.cfg.Rate, e.cfg.MaxInFlight, func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			endpoint, path := b.next()
			return e.targets.Pick(req.Seq).Get(ctx, endpoint, path, nil)
		}, func(res loadgen.Result) { e.observe("browse", res) })
	})
	if d.reserveRate > 0 {
		rv := &reserver{skus: e.cfg.Reserve.SKUs}
		wg.Go(func() {
			repeat(ctx, d.reserveRate, e.cfg.MaxInFlight, func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
				return rv.do(ctx, e.targets.Pick(req.Seq), req.Seq)
			}, func(res loadgen.Result) { e.observe("reserve", res) })
		})
	}
	wg.Go(func() { d.bursts(ctx, e) })
	wg.Wait()
	keys, series := e.stats.Series()
	fmt.Fprintf(e.stdout, "%-10s %-16s %-9s %9s %9s %9s\n", "scenario", "endpoint", "code", "requests", "p50ms", "p99ms")
	for i, k := range keys {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		fmt.Fprintf(e.stdout, "%-10s %-16s %-9s %9d %9.2f %9.2f\n", k.Scenario, k.Endpoint, k.Code, series[i].Requests,
			ms(series[i].Latency.Percentile(50)), ms(series[i].Latency.Percentile(99)))
	}
	return nil
}

// repeat runs open-model load at rate in chunks of demoChunk until ctx ends.
// Requests in flight when ctx ends finish (bounded by the client timeout)
// instead of being cut off and counted as timeouts.
func repeat(ctx context.Context, rate float64, maxInFlight int, do func(context.Context, loadgen.Request) loadgen.Outcome, onResult func(loadgen.Result)) {
	for ctx.Err() == nil {
		r := &loadgen.Runner{Rate: rate, Duration: demoChunk, MaxInFlight: maxInFlight, OnResult: onResult,
			Do: func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
				return do(context.WithoutCancel(ctx), req)
			}}
		_, _ = r.Run(ctx) // the only errors are ctx's and configuration ones validated earlier
	}
}

// bursts waits -burst-every, then drives a stampede burst with the next
// -phases strategy, until ctx ends.
func (d *Demo) bursts(ctx context.Context, e *Env) {
	hk := e.cfg.HotKeys
	read := hotKeyReads(e.targets, hk.Keys)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.burstEvery - d.burstFor):
		}
		p := hk.Phases[i%len(hk.Phases)]
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

// reserver is demo's reservation traffic: it reserves one unit of a random
// SKU, or cancels the oldest reservation it made, so the SKUs' stock is
// reserved and released in turn and never runs out for good. Safe for
// concurrent use.
type reserver struct {
	skus []int64
	mu   sync.Mutex
	open []int64 // ids of reservations made and not yet cancelled, oldest first
}

// do sends request seq: even ones reserve, odd ones cancel when there is a
// reservation to cancel.
func (rv *reserver) do(ctx context.Context, c *loadgen.Client, seq int64) loadgen.Outcome {
	if seq%2 == 1 {
		rv.mu.Lock()
		var id int64
		if len(rv.open) > 0 {
			id, rv.open = rv.open[0], rv.open[1:]
		}
		rv.mu.Unlock()
		if id != 0 {
			out, _ := c.PostJSON(ctx, "cancel", fmt.Sprintf("/v1/reservations/%d/cancel", id), map[string]any{}, nil, loadgen.Expect(http.StatusConflict))
			return out
		}
	}
	body := map[string]any{
		"product_id":      rv.skus[rand.IntN(len(rv.skus))],
		"quantity":        1,
		"idempotency_key": fmt.Sprintf("demo-%d-%d", time.Now().UnixNano(), seq),
	}
	out, data := c.PostJSON(ctx, reserveEndpoint, "/v1/reservations", body, nil, loadgen.Expect(http.StatusConflict))
	if out.Code == "201" {
		var created struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(data, &created) == nil && created.ID != 0 {
			rv.mu.Lock()
			rv.open = append(rv.open, created.ID)
			rv.mu.Unlock()
		}
	}
	return out
}
