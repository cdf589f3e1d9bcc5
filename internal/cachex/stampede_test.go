package cachex

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The stampede tests read one hot key through two Cache instances with
// clients of their own, on a virtual clock (simClock) that only the test
// moves: a read every readEvery, a recompute that takes recomputeCost. So
// what they assert (recomputes per TTL window, reads that waited, duplicate
// loads) does not depend on how fast the machine runs the reads.
const (
	stampedeTTL   = 10 * time.Second
	recomputeCost = 500 * time.Millisecond
	readEvery     = 16 * time.Millisecond
	stampedeRun   = 55 * time.Second // 5.5 TTL windows
)

// stampedeResult is what one stampede run counted after the first fill.
type stampedeResult struct {
	fillLoads  int64   // loader calls of the first fill
	loads      int64   // loader calls after it
	duplicates int64   // of those, loads of a value another load had already recomputed
	windows    float64 // TTL windows the run spanned
	waits      int     // reads that waited for a recompute
	discarded  int     // recomputes whose write was refused (cachex_recomputes_discarded_total)
	stale      int     // reads served the old value while a refresh landed
}

// stampede runs the stampede of one strategy: the first fill (instance 0
// leads it; under XFetch instance 1 waits for its lease meanwhile), then
// stampedeRun of virtual time with a read every readEvery, alternating
// between the instances. Instance 1's clock runs skew ahead of instance 0's.
func stampede(t *testing.T, strategy Strategy, beta float64, skew time.Duration) stampedeResult {
	t.Helper()
	if testing.Short() {
		t.Skip("the stampede reads Redis thousands of times")
	}
	node := redistest.Redis(t)
	s := &sim{t: t, clk: newSimClock(), observer: client(t, node), gens: map[string]int64{}}
	for i := range s.caches {
		rdb := client(t, node)
		s.cmds[i] = &commands{}
		rdb.AddHook(s.cmds[i])
		offset := time.Duration(i) * skew
		now := func() time.Time { return s.clk.Now().Add(offset) }
		// Grace keeps entries in Redis, whose own expiry runs on the real
		// clock; LoadTimeout bounds the locks the same way, and LeaseWait
		// the fill's wait for the other instance, which takes recomputeCost
		// of real time too. ClockSync measures the offset of the server's
		// clock once, in New, while the virtual clock still follows the
		// real one. MaxLoads leaves the TTL stampede unbounded.
		s.caches[i], _ = newCache(t, rdb, JSON[string]{}, Options{Name: "stampede", TTL: stampedeTTL, Grace: time.Hour,
			Strategy: strategy, Beta: beta, noEarlyRefresh: beta == 0, now: now, ClockSync: time.Hour,
			LoadTimeout: eventWait, LeaseWait: 10 * time.Second, MaxLoads: 64})
	}
	s.key = s.caches[0].redisKey("hot")
	s.clk.freeze()

	s.fill(strategy)
	res := stampedeResult{fillLoads: s.loads.Load()}
	missesAfterFill := gets(s.caches[0], resultMiss) + gets(s.caches[1], resultMiss)
	discardedAfterFill := discards(s.caches[0]) + discards(s.caches[1])
	dupsAfterFill := s.duplicates()

	for step := range int(stampedeRun / readEvery) {
		s.advance(readEvery)
		s.read(step % 2)
	}
	for s.clk.sleepers() > 0 { // the recomputes still under way
		s.advance(readEvery)
	}
	res.loads = s.loads.Load() - res.fillLoads
	res.duplicates = s.duplicates() - dupsAfterFill
	res.windows = float64(stampedeRun) / float64(stampedeTTL)
	res.waits = gets(s.caches[0], resultMiss) + gets(s.caches[1], resultMiss) - missesAfterFill
	res.discarded = discards(s.caches[0]) + discards(s.caches[1]) - discardedAfterFill
	res.stale = gets(s.caches[0], resultStale) + gets(s.caches[1], resultStale)
	for i, c := range s.caches {
		c.Close()
		t.Logf("instance %d: recomputes early %d, expired %d, miss %d; contended %v; gets hit %d early %d miss %d stale %d bypass %d",
			i, recomputes(c, reasonEarly, "ok"), recomputes(c, reasonExpired, "ok"), recomputes(c, reasonMiss, "ok"),
			testutil.ToFloat64(c.m.contended), gets(c, resultHit), gets(c, resultEarlyRefresh), gets(c, resultMiss),
			gets(c, resultStale), gets(c, resultBypass))
	}
	t.Logf("%s beta %.2f skew %v: first fill %d loads; then %d loads over %.1f TTL windows (%.2f per window), %d of them duplicates, %d discarded; %d reads waited, %d served stale while a refresh landed",
		strategy, beta, skew, res.fillLoads, res.loads, res.windows, float64(res.loads)/res.windows, res.duplicates, res.discarded,
		res.waits, res.stale)
	return res
}

// TestStampedeXFetch: about one recompute per TTL window, none of them a
// duplicate, and no reader ever waits. beta is chosen for the traffic: the
// first refresh starts on average
// beta*delta*(ln(r*beta)+0.577) before expiry, r being reads per delta (here
// about 31), so beta 0.5 refreshes ~0.8s before a 10s expiry, and
// exp(-r*beta) (the chance that no read refreshes before expiry) is 2e-7.
// delta is the recompute's real duration (cachex times the loader on the
// real clock): at least recomputeCost, and the bound below holds up to
// about twice that.
func TestStampedeXFetch(t *testing.T) {
	t.Parallel()
	r := stampede(t, XFetch, 0.5, 0)
	checkXFetch(t, r)
}

// checkXFetch asserts what XFetch with the refresh lock guarantees: the
// first fill is one load (the other instance waits for its lease), then
// about one recompute per TTL window, each of a value no other load
// recomputed, no reader waits, and no write is refused.
func checkXFetch(t *testing.T, r stampedeResult) {
	t.Helper()
	if r.fillLoads != 1 {
		t.Errorf("the first fill took %d loads, want 1 (the other instance waits for the lease)", r.fillLoads)
	}
	if max := 1.1*r.windows + 1; float64(r.loads) > max {
		t.Errorf("%d recomputes over %.1f windows, want at most %.1f", r.loads, r.windows, max)
	}
	if r.duplicates != 0 {
		t.Errorf("%d loads recomputed a value another load had already recomputed; the refresh lock lets one per key run", r.duplicates)
	}
	if r.waits != 0 {
		t.Errorf("%d reads waited for a recompute after the first fill, want 0", r.waits)
	}
	if r.discarded != 0 {
		t.Errorf("%d recomputes discarded; the refresh lock lets one per key run, so none should be", r.discarded)
	}
}

// TestStampedeTTLBaseline: without the refresh lock every reader that finds
// the key expired recomputes it; the first to finish stores its value and
// the others' writes are refused and counted as discarded, so the values
// stored (recomputes minus discarded) are about one per TTL window.
func TestStampedeTTLBaseline(t *testing.T) {
	t.Parallel()
	r := stampede(t, TTL, 0, 0)
	if per := float64(r.loads) / r.windows; per < 5 || r.duplicates == 0 {
		t.Errorf("plain TTL caching: %.1f recomputes per window, %d duplicates; the baseline should stampede (many per window)", per, r.duplicates)
	}
	if stored := float64(r.loads - int64(r.discarded)); stored < r.windows-1 || stored > r.windows+1 {
		t.Errorf("%d recomputes, %d discarded: %.0f values stored over %.1f TTL windows, want one per window", r.loads, r.discarded, stored, r.windows)
	}
}

// TestStampedeXFetchWithSkewedClocks: the two instances' clocks are 20s
// apart, twice the TTL. Expiries are compared on the Redis server's clock,
// so the instance that runs ahead neither recomputes on every read nor
// waits for the other's lease: as without skew, the first fill is one load
// (a lease wait that gave up would have been a second), then about one
// recompute per window and no reader waits.
func TestStampedeXFetchWithSkewedClocks(t *testing.T) {
	t.Parallel()
	r := stampede(t, XFetch, 0.5, 2*stampedeTTL)
	checkXFetch(t, r)
}

// sim drives a stampede on a simClock. After each step it waits until the
// instances are settled: every read has returned or waits for a loader
// that sleeps on the virtual clock, and so does every recompute.
type sim struct {
	t        *testing.T
	clk      *simClock
	caches   [2]*Cache[string]
	cmds     [2]*commands
	observer *redis.Client // reads the key for the loaders, outside the caches
	key      string        // the hot key in Redis
	pending  [2]atomic.Int64
	loads    atomic.Int64

	mu   sync.Mutex
	gens map[string]int64 // loads per value recomputed (by its computedAt)
}

// load returns instance i's loader: it notes which value it recomputes (the
// one in Redis when it starts), then takes recomputeCost on both clocks.
func (s *sim) load(i int) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		began := time.Now()
		s.loads.Add(1)
		gen := ""
		if raw, err := s.observer.Get(ctx, s.key).Bytes(); err == nil {
			if e, err := decodeEntry(raw); err == nil {
				gen = fmt.Sprint(e.computedAt.UnixNano())
			}
		}
		s.mu.Lock()
		s.gens[gen]++
		s.mu.Unlock()
		if err := s.clk.sleep(ctx, i, recomputeCost); err != nil {
			return "", err
		}
		// cachex times the loader on the real clock (the XFetch delta): the
		// load lasts recomputeCost there too.
		time.Sleep(recomputeCost - time.Since(began))
		return "stats", nil
	}
}

// duplicates counts the loads of a value that another load had already
// recomputed.
func (s *sim) duplicates() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, loads := range s.gens {
		n += loads - 1
	}
	return n
}

// launch starts a read on instance i.
func (s *sim) launch(i int) {
	s.pending[i].Add(1)
	go func() {
		defer s.pending[i].Add(-1)
		if _, err := s.caches[i].Get(context.Background(), "hot", s.load(i)); err != nil {
			s.t.Error(err)
		}
	}()
}

// read reads on instance i and waits until the instances have settled.
func (s *sim) read(i int) {
	s.launch(i)
	s.settle()
}

// fill is the first fill: instance 0 misses and leads it, instance 1 misses
// while instance 0's load sleeps (under XFetch it polls for instance 0's
// value, the lease), then the load ends.
func (s *sim) fill(strategy Strategy) {
	s.read(0)
	s.launch(1)
	if strategy == XFetch {
		waitFor(s.t, "instance 1 to wait for instance 0's lease", func() bool { return s.cmds[1].count("get") >= 2 })
	} else {
		s.settle()
	}
	s.advance(recomputeCost)
}

// advance moves the virtual clock by d, waking the loaders that come due one
// at a time, in order, and letting the instances settle after each.
func (s *sim) advance(d time.Duration) {
	until := s.clk.Now().Add(d)
	for s.clk.wakeNext(until) {
		s.settle()
	}
	s.clk.set(until)
	s.settle()
}

// settle waits until settled holds.
func (s *sim) settle() {
	s.t.Helper()
	deadline := time.Now().Add(eventWait)
	for !s.settled() {
		if time.Now().After(deadline) {
			s.t.Fatalf("the instances did not settle within %v: reads pending %d, %d; loaders asleep %d, %d",
				eventWait, s.pending[0].Load(), s.pending[1].Load(), s.clk.asleep(0), s.clk.asleep(1))
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// settled reports whether nothing on either instance can move before the
// virtual clock does: under TTL every pending read is in its own loader,
// asleep; under XFetch every pending read waits for the key's recompute in
// its process, and that recompute and the background refresh, if any, are
// in their loaders, asleep.
func (s *sim) settled() bool {
	for i, c := range s.caches {
		pending, asleep := int(s.pending[i].Load()), s.clk.asleep(i)
		flight, refresh := 0, 0
		if c.loads.busy("hot") {
			flight = 1
		}
		if c.refreshInFlight("hot") {
			refresh = 1
		}
		if c.Strategy() == TTL {
			if pending != asleep || flight+refresh != 0 {
				return false
			}
			continue
		}
		if pending != waitersOf(c, "hot") || asleep != flight+refresh {
			return false
		}
	}
	return true
}

// simClock is a virtual clock that follows the real one until frozen, and
// from then on moves only when the test moves it. Loaders sleep on it.
type simClock struct {
	mu       sync.Mutex
	frozen   bool
	now      time.Time
	sleeping []*sleeper // in the order they fall asleep
}

// sleeper is a loader of instance owner asleep until a virtual time.
type sleeper struct {
	until time.Time
	owner int
	wake  chan struct{}
}

func newSimClock() *simClock { return &simClock{} }

// Now is the virtual time.
func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		return time.Now()
	}
	return c.now
}

// freeze stops the clock at the real time.
func (c *simClock) freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen, c.now = true, time.Now()
}

// set moves the clock to t.
func (c *simClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// sleep returns once the clock has moved d past now, or ctx has ended.
func (c *simClock) sleep(ctx context.Context, owner int, d time.Duration) error {
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), owner: owner, wake: make(chan struct{})}
	c.sleeping = append(c.sleeping, s)
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.sleeping {
			if x == s {
				c.sleeping = append(c.sleeping[:i], c.sleeping[i+1:]...)
				break
			}
		}
		return ctx.Err()
	}
}

// wakeNext moves the clock to the earliest time a sleeper waits for, if it
// is at most until, and wakes that sleeper (the first asleep among those
// of that time). It reports whether it woke one.
func (c *simClock) wakeNext(until time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := -1
	for i, s := range c.sleeping {
		if !s.until.After(until) && (next < 0 || s.until.Before(c.sleeping[next].until)) {
			next = i
		}
	}
	if next < 0 {
		return false
	}
	s := c.sleeping[next]
	c.sleeping = append(c.sleeping[:next], c.sleeping[next+1:]...)
	c.now = s.until
	close(s.wake)
	return true
}

// asleep counts instance owner's sleepers.
func (c *simClock) asleep(owner int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.sleeping {
		if s.owner == owner {
			n++
		}
	}
	return n
}

// sleepers counts every sleeper.
func (c *simClock) sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleeping)
}
