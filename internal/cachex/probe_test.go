package cachex

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The half-open probe is made by a request that has given up (cancelled, or
// a deadline shorter than Timeout): its outcome must still be recorded, and
// the cache must read from Redis again within one cooldown.
func TestBreakerHealsAfterAProbeWhoseCallerGaveUp(t *testing.T) {
	t.Parallel()
	for name, gaveUp := range map[string]func() (context.Context, context.CancelFunc){
		"cancelled": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		},
		"short deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Nanosecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			node := redistest.RedisNodes(t, 1)[0]
			clk := newClock()
			const cooldown = time.Second
			// Timeout is what the read on the paused server costs; it is a
			// second so that no read of the healthy one, on a busy machine,
			// times out and opens the breaker (BreakerFailures is 1).
			c, _ := newCache(t, client(t, node), JSON[string]{}, Options{Name: "probe", TTL: time.Hour, Timeout: time.Second,
				BreakerFailures: 1, BreakerCooldown: cooldown, now: clk.Now, noClockSync: true})
			l := &loader{}
			if v, err := c.Get(ctx, "k", l.load); err != nil || v != "v1" {
				t.Fatalf("fill: %q, %v", v, err)
			}
			node.Pause()
			_, _ = c.Get(ctx, "k", l.load) // times out: the breaker opens
			node.Resume()
			if !c.brk.open() {
				t.Fatal("the breaker did not open")
			}
			clk.Add(cooldown + time.Millisecond)
			probeCtx, cancel := gaveUp()
			_, _ = c.Get(probeCtx, "k", l.load) // the probe
			cancel()
			clk.Add(cooldown + time.Millisecond)
			hits := gets(c, resultHit)
			for range 3 {
				if v, err := c.Get(ctx, "k", l.load); err != nil || v != "v1" {
					t.Fatalf("Get after the probe: %q, %v; want v1 from Redis", v, err)
				}
			}
			if got := gets(c, resultHit) - hits; got != 3 || c.brk.open() {
				t.Fatalf("%d of 3 reads hit Redis one cooldown after the probe (breaker open: %v), want 3", got, c.brk.open())
			}
		})
	}
}
