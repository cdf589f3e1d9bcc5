package cachex

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// TestRedisKilledMidRun: callers keep getting values with no error, at most
// one loader per key runs at a time in the process, the breaker stops paying
// for Redis calls, and the cache heals by itself once Redis is back.
func TestRedisKilledMidRun(t *testing.T) {
	ctx := context.Background()
	node := testenv.RedisNodes(t, 1)[0]
	rdb := client(t, node)
	cmds := &commands{}
	rdb.AddHook(cmds)
	c, _ := newCache(t, rdb, JSON[string]{}, Options{
		Name: "outage", TTL: time.Minute, BreakerFailures: 3, BreakerCooldown: 200 * time.Millisecond,
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
	waitFor(t, "hits before the outage", 5*time.Second, func() bool { return gets(c, resultHit) > 100 })
	node.Kill()
	waitFor(t, "the breaker to open", 5*time.Second, c.brk.open)
	waitFor(t, "reads served without Redis", 5*time.Second, func() bool { return gets(c, resultBypass) > 200 })
	// Open breaker: Redis is not even asked while callers are served.
	before := cmds.count("get")
	bypassBefore := gets(c, resultBypass)
	waitFor(t, "more bypassed reads", 5*time.Second, func() bool { return gets(c, resultBypass) > bypassBefore+200 })
	if asked := cmds.count("get") - before; asked > 20 {
		t.Errorf("%d GETs sent for %d reads while the breaker was open; want only the probes", asked, gets(c, resultBypass)-bypassBefore)
	}

	node.Restart()
	hitsBefore := gets(c, resultHit)
	waitFor(t, "hits again after Redis came back", 5*time.Second, func() bool { return gets(c, resultHit) > hitsBefore+100 })
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
	ctx := context.Background()
	node := testenv.RedisNodes(t, 1)[0]
	opt := node.Options()
	opt.ContextTimeoutEnabled = true
	opt.ReadTimeout, opt.WriteTimeout = 10*time.Second, 10*time.Second // only the cache's Timeout can help
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
	// Each call must end by the cache's Timeout (50ms), not the client's
	// (10s) or the pause's (until the test ends). The caller's deadline is 20
	// Timeouts, so only a call that waited for Redis would miss it.
	callCtx, cancel := context.WithTimeout(ctx, 20*timeout)
	defer cancel()
	for range 3 {
		v, err := c.Get(callCtx, "k", l.load)
		if err != nil || v == "" {
			t.Fatalf("Get on a paused Redis = %q, %v; want a value computed without Redis", v, err)
		}
	}
	if gets(c, resultBypass) != 3 {
		t.Fatalf("%d bypassed reads, want 3", gets(c, resultBypass))
	}
}
