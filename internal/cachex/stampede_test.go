package cachex

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// stampede runs readers goroutines, spread over two Cache instances with
// their own clients, against one hot key whose loader takes 50ms, for run of
// real time with a 1s TTL. It returns the loader calls, the number of TTL
// windows the run spanned, and the reads that waited for a recompute after
// the first fill, the recomputes after it whose value was discarded
// (cachex_recomputes_discarded_total), and the slowest read. The second
// instance's clock runs skew ahead of the first's.
func stampede(t *testing.T, strategy Strategy, beta float64, run, skew time.Duration) (loads int64, windows float64, waits, discarded int, slowest time.Duration) {
	t.Helper()
	if testing.Short() {
		t.Skip("the stampede runs for seconds of real time")
	}
	node := testenv.Redis(t)
	const ttl = time.Second
	var calls atomic.Int64
	load := func(ctx context.Context) (string, error) {
		calls.Add(1)
		time.Sleep(50 * time.Millisecond)
		return "stats", nil
	}
	var caches [2]*Cache[string]
	for i := range caches {
		// A connection per reader: the background refresh must not queue for
		// a connection behind 100 readers (size pools for your concurrency).
		opt := node.Options()
		opt.ContextTimeoutEnabled, opt.PoolSize = true, 110
		rdb := redis.NewClient(opt)
		t.Cleanup(func() { _ = rdb.Close() })
		offset := time.Duration(i) * skew
		now := func() time.Time { return time.Now().Add(offset) }
		caches[i], _ = newCache(t, rdb, JSON[string]{}, Options{Name: "stampede", TTL: ttl, Timeout: time.Second, Strategy: strategy, Beta: beta,
			noEarlyRefresh: beta == 0, now: now})
	}
	ctx := context.Background()
	// The first fill: both instances miss. Under XFetch instance 0 takes the
	// key's lock first and instance 1 waits for its value (the lease); the
	// wait is part of slowest.
	var wg sync.WaitGroup
	var fill time.Duration
	if strategy == XFetch {
		wg.Go(func() { _, _ = caches[0].Get(ctx, "hot", load) })
		lock := lockKey(caches[0].redisKey("hot"))
		waitFor(t, "instance 0 to lead the fill", 5*time.Second, func() bool { return node.Client().Exists(ctx, lock).Val() == 1 })
		began := time.Now()
		_, _ = caches[1].Get(ctx, "hot", load)
		fill = time.Since(began)
	} else {
		for _, c := range caches {
			wg.Go(func() { _, _ = c.Get(ctx, "hot", load) })
		}
	}
	wg.Wait()
	filled := calls.Load()
	if strategy == XFetch && filled != 1 {
		t.Errorf("the first fill took %d loads, want 1 (the other instance waits for the lease)", filled)
	}
	missesAfterFill := gets(caches[0], resultMiss) + gets(caches[1], resultMiss)
	discardedAfterFill := discards(caches[0]) + discards(caches[1])

	start := time.Now()
	deadline := start.Add(run)
	var reads atomic.Int64
	var slowestNs atomic.Int64
	slowestNs.Store(int64(fill))
	for i := range 200 {
		c := caches[i%2]
		wg.Go(func() {
			for time.Now().Before(deadline) {
				began := time.Now()
				if _, err := c.Get(ctx, "hot", load); err != nil {
					t.Error(err)
					return
				}
				for took := int64(time.Since(began)); ; {
					if s := slowestNs.Load(); took <= s || slowestNs.CompareAndSwap(s, took) {
						break
					}
				}
				reads.Add(1)
				// Each reader sends ~50 requests a second (10k/s in all).
				// Spinning readers would saturate this two-core machine under
				// the race detector and starve redis-server, whose replies
				// then take longer than any refresh lead.
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, c := range caches {
		c.Close()
	}
	loads = calls.Load() - filled
	windows = float64(elapsed) / float64(ttl)
	waits = gets(caches[0], resultMiss) + gets(caches[1], resultMiss) - missesAfterFill
	discarded = discards(caches[0]) + discards(caches[1]) - discardedAfterFill
	stale := gets(caches[0], resultStale) + gets(caches[1], resultStale)
	for i, c := range caches {
		t.Logf("instance %d: recomputes early %d, expired %d, miss %d; contended %v; gets hit %d early %d miss %d bypass %d",
			i, recomputes(c, reasonEarly, "ok"), recomputes(c, reasonExpired, "ok"), recomputes(c, reasonMiss, "ok"),
			testutil.ToFloat64(c.m.contended), gets(c, resultHit), gets(c, resultEarlyRefresh), gets(c, resultMiss), gets(c, resultBypass))
		for _, op := range []string{"get", "set", "lock", "unlock", "decode"} {
			if n := testutil.ToFloat64(c.m.redisErrs.WithLabelValues(op)); n > 0 {
				t.Logf("instance %d: %v redis errors on %s", i, n, op)
			}
		}
	}
	slowest = time.Duration(slowestNs.Load())
	t.Logf("%s beta %.2f skew %v: %d reads in %v (%.0f per 50ms), %d recomputes after the fill over %.1f TTL windows (%.2f per window), %d of them discarded, %d reads waited, %d served stale while a refresh landed, slowest read %v",
		strategy, beta, skew, reads.Load(), elapsed.Round(time.Millisecond), float64(reads.Load())/elapsed.Seconds()/20,
		loads, windows, float64(loads)/windows, discarded, waits, stale, slowest.Round(time.Millisecond))
	return loads, windows, waits, discarded, slowest
}

// TestStampedeXFetch: about one recompute per TTL window and no reader ever
// waits. beta is chosen for the traffic, as docs/cachex.md explains: the first
// refresh starts on average beta*delta*(ln(r*beta)+0.577) before expiry, r
// being reads per delta (here a few hundred to a few thousand), so beta 1
// would refresh ~300ms early and recompute ~1.3 times per 1s window; beta 0.5
// halves the lead, and exp(-r*beta) (the chance that no read refreshes
// before expiry) stays negligible.
func TestStampedeXFetch(t *testing.T) {
	recomputes, windows, waits, discarded, _ := stampede(t, XFetch, 0.5, 5500*time.Millisecond, 0)
	if max := 1.1*windows + 1; float64(recomputes) > max {
		t.Errorf("%d recomputes over %.1f windows, want at most %.1f", recomputes, windows, max)
	}
	if waits != 0 {
		t.Errorf("%d reads waited for a recompute after the first fill, want 0", waits)
	}
	if discarded != 0 {
		t.Errorf("%d recomputes discarded; the refresh lock lets one per key run, so none should be", discarded)
	}
}

// TestStampedeTTLBaseline: without the refresh lock every reader that finds
// the key expired recomputes it; the first to finish stores its value and
// the others' writes are refused and counted as discarded, so the values
// stored (recomputes minus discarded) are about one per TTL window.
func TestStampedeTTLBaseline(t *testing.T) {
	recomputes, windows, _, discarded, _ := stampede(t, TTL, 0, 5500*time.Millisecond, 0)
	if per := float64(recomputes) / windows; per < 5 {
		t.Errorf("plain TTL caching: %.1f recomputes per window; the baseline should stampede (many per window)", per)
	}
	if stored := float64(recomputes - int64(discarded)); stored < windows-1 || stored > windows+1 {
		t.Errorf("%d recomputes, %d discarded: %.0f values stored over %.1f TTL windows, want one per window", recomputes, discarded, stored, windows)
	}
}

// TestStampedeXFetchWithSkewedClocks: the two instances' clocks are 2s
// apart, twice the TTL. Expiries are compared on the Redis server's clock,
// so the instance that runs ahead neither recomputes on every read nor waits
// for the other's lease: as without skew, about one recompute per window,
// no reader waits for one, the first fill is one load, and the slowest read
// (the instance that waits for the other's fill included) stays far below a
// lease wait (LeaseWait, 2s).
func TestStampedeXFetchWithSkewedClocks(t *testing.T) {
	recomputes, windows, waits, _, slowest := stampede(t, XFetch, 0.5, 5500*time.Millisecond, 2*time.Second)
	if max := 1.1*windows + 1; float64(recomputes) > max {
		t.Errorf("%d recomputes over %.1f windows, want at most %.1f", recomputes, windows, max)
	}
	if waits != 0 {
		t.Errorf("%d reads waited for a recompute after the first fill, want 0", waits)
	}
	if slowest > 500*time.Millisecond {
		t.Errorf("the slowest read took %v: it waited for a lease", slowest)
	}
}
