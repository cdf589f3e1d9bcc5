package cachex

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// TestRedisKilledMidRun: callers keep getting values with no error, at most
// one loader per key runs at a time in the process, the breaker stops paying
// for Redis calls, and the cache heals by itself once Redis is back. The
// breaker's cooldown runs on an injected clock: while it stands still the
// open breaker sends Redis nothing at all, however long the machine takes
// to serve the reads; once a cooldown has passed, a probe finds Redis back.
func TestRedisKilledMidRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	rdb := client(t, node)
	cmds := &commands{}
	rdb.AddHook(cmds)
	clk := newClock()
	const cooldown = 200 * time.Millisecond
	c, _ := newCache(t, rdb, JSON[string]{}, Options{
		Name: "outage", TTL: time.Minute, BreakerFailures: 3, BreakerCooldown: cooldown, now: clk.Now, noClockSync: true,
	})
	l := &loader{delay: 5 * time.Millisecond}
	if _, err := c.Get(ctx, "k", l.load); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var errs, served atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := c.Get(ctx, "k", l.load); err != nil {
					errs.Add(1)
				} else {
					served.Add(1)
				}
			}
		})
	}
	waitFor(t, "hits before the outage", func() bool { return gets(c, resultHit) > 100 })
	node.Kill()
	waitFor(t, "the breaker to open", c.brk.open)
	waitFor(t, "reads served without Redis", func() bool { return gets(c, resultBypass) > 200 })
	// Open breaker, no cooldown passed: Redis is not even asked while
	// callers are served.
	before := cmds.count("get")
	bypassBefore := gets(c, resultBypass)
	waitFor(t, "more bypassed reads", func() bool { return gets(c, resultBypass) > bypassBefore+200 })
	if asked := cmds.count("get") - before; asked != 0 {
		t.Errorf("%d GETs sent for %d reads while the breaker was open and no cooldown had passed; want none", asked, gets(c, resultBypass)-bypassBefore)
	}

	node.Restart()
	hitsBefore := gets(c, resultHit)
	// A cooldown passes between polls: a read after it is the probe, which
	// finds Redis back (or, failing, opens the breaker for another one).
	waitFor(t, "hits again after Redis came back", func() bool {
		clk.Add(cooldown)
		return gets(c, resultHit) > hitsBefore+100
	})
	stop.Store(true)
	wg.Wait()

	if errs.Load() != 0 {
		t.Errorf("%d of %d reads returned an error during the outage", errs.Load(), errs.Load()+served.Load())
	}
	if l.maxIn.Load() != 1 {
		t.Errorf("%d loaders ran at once for one key, want at most 1", l.maxIn.Load())
	}
}

// TestRedisPausedCallsReturnWithinTimeout: a frozen Redis costs a call the
// configured timeout, not the length of the pause.
func TestRedisPausedCallsReturnWithinTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	opt := node.Options()
	opt.ContextTimeoutEnabled = true
	opt.ReadTimeout, opt.WriteTimeout = -1, -1 // no timeouts of the client's own: only the cache's Timeout can help
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	const timeout = 50 * time.Millisecond
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "pause", TTL: time.Minute, Timeout: timeout, BreakerFailures: 1000})
	l := &loader{}
	if _, err := c.Get(ctx, "k", l.load); err != nil {
		t.Fatal(err)
	}
	node.Pause()
	defer node.Resume()
	// The pause lasts until the test ends, and the client would wait for it:
	// a call that returns at all was ended by the cache's Timeout. The
	// caller's deadline is only a ceiling for a call that waits for Redis.
	// Counted from here: on a busy machine the first Get may have timed out
	// too.
	bypassed, failed := gets(c, resultBypass), counterOf(c.m.redisErrs.WithLabelValues("get"))
	callCtx, cancel := context.WithTimeout(ctx, eventWait)
	defer cancel()
	for range 3 {
		v, err := c.Get(callCtx, "k", l.load)
		if err != nil || v == "" {
			t.Fatalf("Get on a paused Redis = %q, %v; want a value computed without Redis", v, err)
		}
	}
	if n := gets(c, resultBypass) - bypassed; n != 3 {
		t.Fatalf("%d bypassed reads, want 3", n)
	}
	// Each GET was ended by the cache's Timeout while the caller still
	// waited (a call its caller gave up on is not counted as a failure).
	if n := counterOf(c.m.redisErrs.WithLabelValues("get")) - failed; n != 3 || callCtx.Err() != nil {
		t.Fatalf("%v GETs failed with the caller still waiting (caller's context: %v), want 3 ended by the cache's Timeout", n, callCtx.Err())
	}
}
