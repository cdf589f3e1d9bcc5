package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Demo scenario defaults, also shown by -h.
const (
	demoScenario       = "demo"
	defaultReserveRate = 5.0
	defaultBurstEvery  = 3 * time.Minute
	defaultBurstFor    = 40 * time.Second
	defaultBurstRate   = 200.0
	// demoChunk bounds each Runner of the endless mix; the mix restarts its
	// schedule every chunk (a Runner must stop by itself).
	demoChunk = time.Minute
)

// demoConfig is the part of the command line only demo uses (it also uses
// -rate for browsing, the browse flags, -skus, -phases and -hot-keys).
type demoConfig struct {
	reserveRate float64
	burstEvery  time.Duration
	burstFor    time.Duration
	burstRate   float64
}

// registerDemoFlags adds the demo flags to fs, storing into c.
func registerDemoFlags(fs *flag.FlagSet, c *demoConfig) {
	fs.Float64Var(&c.reserveRate, "demo-reserve-rate", defaultReserveRate,
		"demo: reservation requests per second on -skus (half reserve one unit, half cancel the oldest open reservation, so stock keeps flowing)")
	fs.DurationVar(&c.burstEvery, "burst-every", defaultBurstEvery,
		"demo: time between the starts of stampede bursts")
	fs.DurationVar(&c.burstFor, "burst-for", defaultBurstFor,
		"demo: length of a stampede burst on the -hot-keys categories; each burst switches category_stats to the next -phases strategy")
	fs.Float64Var(&c.burstRate, "burst-rate", defaultBurstRate,
		"demo: requests per second of a stampede burst")
}

// validate checks the demo flags.
func (c *demoConfig) validate() error {
	switch {
	case !(c.reserveRate >= 0):
		return fmt.Errorf("-demo-reserve-rate must be >= 0, got %v", c.reserveRate)
	case c.burstEvery <= 0 || c.burstFor <= 0 || c.burstFor > c.burstEvery:
		return fmt.Errorf("-burst-for (%v) must be > 0 and at most -burst-every (%v)", c.burstFor, c.burstEvery)
	case !(c.burstRate > 0):
		return fmt.Errorf("-burst-rate must be > 0, got %v", c.burstRate)
	}
	return nil
}

// runDemo runs the endless mix until ctx ends or -duration passes: browsing
// at -rate, reservations and cancellations at -demo-reserve-rate, and a
// stampede burst every -burst-every. A failed admin call or request is
// logged and counted, never fatal: the demo keeps going while replicas
// restart. It prints the per-series figures when it stops and writes no
// report.
func runDemo(ctx context.Context, e *env) error {
	if d := e.cfg.duration; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	e.stats.SetPhase("steady")
	var wg sync.WaitGroup
	b := newBrowser(e.cfg.browse, uint64(time.Now().UnixNano()))
	wg.Go(func() {
		repeat(ctx, e.cfg.rate, e.cfg.maxInFlight, func(ctx context.Context, req Request) Outcome {
			endpoint, path := b.next()
			return e.targets.Pick(req.Seq).Get(ctx, endpoint, path, nil)
		}, func(res Result) { e.observe(browseScenario, res) })
	})
	if e.cfg.demo.reserveRate > 0 {
		rv := &reserver{skus: e.cfg.reserve.skus}
		wg.Go(func() {
			repeat(ctx, e.cfg.demo.reserveRate, e.cfg.maxInFlight, func(ctx context.Context, req Request) Outcome {
				return rv.do(ctx, e.targets.Pick(req.Seq), req.Seq)
			}, func(res Result) { e.observe(reserveScenario, res) })
		})
	}
	wg.Go(func() { e.bursts(ctx) })
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
func repeat(ctx context.Context, rate float64, maxInFlight int, do func(context.Context, Request) Outcome, onResult func(Result)) {
	for ctx.Err() == nil {
		r := &Runner{Rate: rate, Duration: demoChunk, MaxInFlight: maxInFlight, OnResult: onResult,
			Do: func(ctx context.Context, req Request) Outcome { return do(context.WithoutCancel(ctx), req) }}
		_, _ = r.Run(ctx) // the only errors are ctx's and configuration ones validated earlier
	}
}

// bursts waits -burst-every, then drives a stampede burst with the next
// -phases strategy, until ctx ends.
func (e *env) bursts(ctx context.Context) {
	sc, dc := e.cfg.stampede, e.cfg.demo
	read := hotKeyReads(e.targets, sc.hotKeys)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(dc.burstEvery - dc.burstFor):
		}
		p := sc.phases[i%len(sc.phases)]
		if err := p.apply(ctx, e.targets, sc.adminToken); err != nil && ctx.Err() == nil {
			fmt.Fprintln(e.stderr, "loadgen: burst: set strategy:", err)
		}
		e.stats.SetPhase("burst " + p.name)
		r := &Runner{Rate: dc.burstRate, Duration: dc.burstFor, MaxInFlight: e.cfg.maxInFlight,
			Do: func(ctx context.Context, req Request) Outcome {
				return read(context.WithoutCancel(ctx), req)
			},
			OnResult: func(res Result) { e.observe(stampedeScenario, res) },
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
func (rv *reserver) do(ctx context.Context, c *Client, seq int64) Outcome {
	if seq%2 == 1 {
		rv.mu.Lock()
		var id int64
		if len(rv.open) > 0 {
			id, rv.open = rv.open[0], rv.open[1:]
		}
		rv.mu.Unlock()
		if id != 0 {
			out, _ := c.PostJSON(ctx, "cancel", fmt.Sprintf("/v1/reservations/%d/cancel", id), map[string]any{}, nil, Expect(http.StatusConflict))
			return out
		}
	}
	body := map[string]any{
		"product_id":      rv.skus[rand.IntN(len(rv.skus))],
		"quantity":        1,
		"idempotency_key": fmt.Sprintf("demo-%d-%d", time.Now().UnixNano(), seq),
	}
	out, data := c.PostJSON(ctx, reserveEndpoint, "/v1/reservations", body, nil, Expect(http.StatusConflict))
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
