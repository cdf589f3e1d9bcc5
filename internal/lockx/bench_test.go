package lockx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The benchmarks put a lockx lock side by side with the plainest correct
// Redis lock on the same server through the same client: SET NX PX with a
// random token, released by a compare-and-delete script run by SHA. The
// ratio between the two is what lockx's fencing token, watchdog, lost-lock
// context, wake-ups and metrics cost on top of the two round trips every lock
// pays. The stampede repository's `make bench` runs them; the stampede
// repository's docs/benchmarks.md holds the figures and the goals.

const (
	// benchTTL is the lock's TTL on both sides. Nothing is held long enough
	// for the watchdog to extend it, but lockx starts (and stops) one per
	// lock: that is part of its cost.
	benchTTL = 10 * time.Second
	// benchTimeout is lockx's default per-call Timeout for benchTTL, and the
	// client's read and write timeouts, so that both sides are bounded alike.
	benchTimeout = benchTTL / 10
	// benchParallelism multiplies GOMAXPROCS into RunParallel's goroutines,
	// as in cachex's benchmarks: a lock call mostly waits for Redis.
	benchParallelism = 4
	// benchKeysPerG is how many resources each goroutine takes in turn. No
	// two goroutines share one, so no acquisition ever waits; a resource
	// comes round again only after its goroutine released it, so Redis keeps
	// a bounded set of lockx's fence counters (which never expire). Every
	// resource is taken once before the timer starts (warm), so that lockx
	// runs its steady state: the counter exists and, under Redlock, agrees
	// on every node.
	benchKeysPerG = 64
	// handoffContenders is how many goroutines want the hot lock at once.
	handoffContenders = 4
	// handoffHold is how long a holder keeps the hot lock: a short critical
	// section, long enough for the waiters to settle into waiting.
	handoffHold = time.Millisecond
	// pollInterval is the polling baseline's fixed retry interval.
	pollInterval = 10 * time.Millisecond
)

// benchClients returns one client per node, honouring context deadlines
// (lockx requires it) with read and write timeouts equal to lockx's Timeout.
func benchClients(tb testing.TB, nodes ...*redistest.Node) []redis.UniversalClient {
	tb.Helper()
	out := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		opt := n.Options()
		opt.ContextTimeoutEnabled = true
		opt.ReadTimeout, opt.WriteTimeout = benchTimeout, benchTimeout
		c := redis.NewClient(opt)
		tb.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// benchLocker is a Locker with the default Options (TTL benchTTL), its
// metrics registered.
func benchLocker(b *testing.B, nodes []redis.UniversalClient) *Locker {
	b.Helper()
	l, _ := newLocker(b, nodes, Options{Name: "bench", TTL: benchTTL})
	return l
}

// benchKeys names the resources: keys[g][i] is goroutine g's i-th, so no
// two goroutines ever want the same lock.
type benchKeys [][]string

func newBenchKeys(prefix string) benchKeys {
	keys := make(benchKeys, benchParallelism*runtime.GOMAXPROCS(0))
	for g := range keys {
		keys[g] = make([]string, benchKeysPerG)
		for i := range keys[g] {
			keys[g][i] = prefix + strconv.Itoa(g) + ":" + strconv.Itoa(i)
		}
	}
	return keys
}

// lockBody takes and releases the lock on one resource. It returns an error
// instead of failing, as RunParallel's goroutines may not call Fatal.
type lockBody func(ctx context.Context, resource string) error

// rawRelease is the compare-and-delete every correct Redis lock releases
// with.
var rawRelease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// rawLock is the floor: SET key token NX PX ttl, then the compare-and-delete
// by SHA (EVALSHA, EVAL when the server lacks it), with lockx's random
// holder token. Two round trips, no goroutine, no timer.
func rawLock(rdb redis.UniversalClient) lockBody {
	ttl := benchTTL.Milliseconds()
	return func(ctx context.Context, key string) error {
		token := newHolder()
		set := redis.NewBoolCmd(ctx, "set", key, token, "px", ttl, "nx")
		_ = rdb.Process(ctx, set)
		if ok, err := set.Result(); err != nil || !ok {
			return errors.Join(err, fmt.Errorf("raw: %s is held", key))
		}
		n, err := rawRelease.Run(ctx, rdb, []string{key}, token).Int64()
		if err == nil && n != 1 {
			err = fmt.Errorf("raw: %s was not held at release", key)
		}
		return err
	}
}

// lockxLock acquires and releases through l.
func lockxLock(l *Locker) lockBody {
	return func(ctx context.Context, resource string) error {
		lk, err := l.Acquire(ctx, resource)
		if err != nil {
			return err
		}
		if lk.Token() <= 0 {
			return fmt.Errorf("lockx: token %d", lk.Token())
		}
		return lk.Release()
	}
}

type benchSide struct {
	name string
	body lockBody
	keys benchKeys
}

// warm takes and releases every resource of s once.
func warm(b *testing.B, s benchSide) {
	b.Helper()
	for _, keys := range s.keys {
		for _, k := range keys {
			if err := s.body(context.Background(), k); err != nil {
				b.Fatalf("%s: warm up: %v", s.name, err)
			}
		}
	}
}

// runSides runs every side sequentially, then every side in parallel, so
// that the sides of each comparison run back to back and drift of the
// machine's load hits them alike.
func runSides(b *testing.B, sides ...benchSide) {
	for _, s := range sides {
		warm(b, s)
	}
	for _, mode := range []string{"seq", "parallel"} {
		for _, s := range sides {
			b.Run(s.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "seq" {
					runLockSeq(b, s.keys[0], s.body)
				} else {
					runLockParallel(b, s.keys, s.body)
				}
			})
		}
	}
}

func runLockSeq(b *testing.B, keys []string, body lockBody) {
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		if err := body(ctx, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
}

func runLockParallel(b *testing.B, keys benchKeys, body lockBody) {
	b.SetParallelism(benchParallelism)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		mine := keys[int(next.Add(1)-1)%len(keys)]
		for i := 0; pb.Next(); i++ {
			if err := body(ctx, mine[i%len(mine)]); err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
		}
	})
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}

// BenchmarkAcquireRelease takes and releases a lock on a resource nobody
// else holds: the plain SET NX PX lock (raw) against lockx on one server,
// with its fencing token, watchdog and metrics. Goal: lockx within 1.05x of
// raw.
func BenchmarkAcquireRelease(b *testing.B) {
	rdb := benchClients(b, redistest.Redis(b))[0]
	runSides(b,
		benchSide{"raw", rawLock(rdb), newBenchKeys("bench:raw:")},
		benchSide{"lockx", lockxLock(benchLocker(b, []redis.UniversalClient{rdb})), newBenchKeys("")},
	)
}

// BenchmarkRedlock takes and releases a lockx lock on one server and on a
// Redlock quorum of three independent servers (the first of which is the
// one server), on resources of their own: the fence counters of a resource
// both took would disagree across the nodes, and the first Redlock acquire
// after each one-node acquire would pay a round of raising them. Goal: three
// nodes within 2.5x of one.
func BenchmarkRedlock(b *testing.B) {
	rdbs := benchClients(b, redistest.RedisNodes(b, 3)...)
	runSides(b,
		benchSide{"1node", lockxLock(benchLocker(b, rdbs[:1])), newBenchKeys("1:")},
		benchSide{"3nodes", lockxLock(benchLocker(b, rdbs)), newBenchKeys("3:")},
	)
}

// handoffTake waits for the hot lock and returns its release.
type handoffTake func(ctx context.Context) (release func() error, err error)

// lockxTake takes the hot lock through l.
func lockxTake(l *Locker) handoffTake {
	return func(ctx context.Context) (func() error, error) {
		lk, err := l.Acquire(ctx, "hot")
		if err != nil {
			return nil, err
		}
		return func() error { return lk.Release() }, nil
	}
}

// BenchmarkHandoff measures how soon a waiter holds a hot lock after its
// holder lets go (handoffContenders goroutines, each with a Locker of its
// own, holding it handoffHold): polling (SET NX PX every pollInterval),
// lockx (Pub/Sub wake-ups) and lockx-handover. It reports the latency from
// Release to the next Acquire's return in µs and in round trips; goal:
// lockx's median within 2.
func BenchmarkHandoff(b *testing.B) {
	rdb := benchClients(b, redistest.Redis(b))[0]
	polling, lockx := make([]handoffTake, handoffContenders), make([]handoffTake, handoffContenders)
	handover := make([]handoffTake, handoffContenders)
	for i := range handoffContenders {
		polling[i] = pollingTake(rdb, "bench:poll:hot")
		l, _ := newLocker(b, []redis.UniversalClient{rdb}, Options{Name: "bench", TTL: benchTTL, Wait: time.Minute})
		lockx[i] = lockxTake(l)
		h, _ := newLocker(b, []redis.UniversalClient{rdb}, Options{Name: "bench-handover", TTL: benchTTL, Wait: time.Minute, HandOver: true})
		handover[i] = lockxTake(h)
	}
	b.Run("polling", func(b *testing.B) { runHandoff(b, rdb, polling) })
	b.Run("lockx", func(b *testing.B) { runHandoff(b, rdb, lockx) })
	b.Run("lockx-handover", func(b *testing.B) { runHandoff(b, rdb, handover) })
}

// pollingTake is a lock without wake-ups: SET NX PX, and on failure the same
// again every pollInterval until ctx ends. The first retry comes after a
// random part of the interval, so that waiters poll at random phases, as
// waiters that arrived at random times would; without it the benchmark's
// waiters, which all start to wait at the moment a holder takes the lock,
// would poll in step and the next poll would come a whole interval after
// each take.
func pollingTake(rdb redis.UniversalClient, key string) handoffTake {
	ttl := benchTTL.Milliseconds()
	return func(ctx context.Context) (func() error, error) {
		token := newHolder()
		var t *time.Timer
		for wait := rand.N(pollInterval); ; wait = pollInterval {
			set := redis.NewBoolCmd(ctx, "set", key, token, "px", ttl, "nx")
			_ = rdb.Process(ctx, set)
			ok, err := set.Result()
			if err != nil {
				return nil, err
			}
			if ok {
				return func() error {
					n, err := rawRelease.Run(context.Background(), rdb, []string{key}, token).Int64()
					if err == nil && n != 1 {
						err = fmt.Errorf("polling: %s was not held at release", key)
					}
					return err
				}, nil
			}
			if t == nil {
				t = time.NewTimer(wait)
				defer t.Stop()
			} else {
				t.Reset(wait)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-t.C:
			}
		}
	}
}

// runHandoff runs b.N handoffs of a hot lock among goroutines, one per
// take, and reports their latency.
func runHandoff(b *testing.B, rdb redis.UniversalClient, takes []handoffTake) {
	hot, idle := pingRTT(b, rdb, 0), pingRTT(b, rdb, handoffHold)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		turn     = sync.NewCond(&mu)
		ops      int       // acquisitions so far
		released time.Time // when the last holder started to release; zero before the first
		lat      []time.Duration
		done     bool
		failure  error
	)
	stop := func(err error) { // called with mu held
		if err != nil && failure == nil {
			failure = err
		}
		done = true
		turn.Broadcast()
		cancel()
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, take := range takes {
		wg.Go(func() {
			for {
				release, err := take(ctx)
				got := time.Now()
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						stop(err)
					}
					mu.Unlock()
					return
				}
				over := ops >= b.N // taken after the last op: give it back
				if !over {
					if !released.IsZero() {
						lat = append(lat, got.Sub(released))
					}
					ops++
				}
				mine := ops
				turn.Broadcast()
				mu.Unlock()
				if !over {
					time.Sleep(handoffHold)
				}
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				err = release()
				mu.Lock()
				switch {
				case err != nil:
					stop(err)
				case ops >= b.N:
					stop(nil)
				}
				for ops == mine && !done { // step back until another holds it
					turn.Wait()
				}
				quit := done
				mu.Unlock()
				if quit {
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if failure != nil {
		b.Fatal(failure)
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(float64(p50)/float64(time.Microsecond), "handoff-p50-us")
	b.ReportMetric(float64(p99)/float64(time.Microsecond), "handoff-p99-us")
	b.ReportMetric(float64(p50)/float64(idle), "handoff-p50-rtt")
	b.ReportMetric(float64(p50)/float64(hot), "handoff-p50-hot-rtt")
	b.ReportMetric(float64(idle)/float64(time.Microsecond), "rtt-idle-us")
	b.ReportMetric(float64(hot)/float64(time.Microsecond), "rtt-hot-us")
}

// pingRTT is the median round trip of a PING through rdb, each sent after
// idle time of doing nothing. Back to back (idle 0), the client's threads
// and the server stay awake; after handoffHold, as at the start of a
// handoff, they have gone to sleep and must be woken, which on a virtual
// machine costs several hot round trips.
func pingRTT(b *testing.B, rdb redis.UniversalClient, idle time.Duration) time.Duration {
	b.Helper()
	ctx := context.Background()
	rtts := make([]time.Duration, 101)
	for i := range rtts {
		if idle > 0 {
			time.Sleep(idle)
		}
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		rtts[i] = time.Since(start)
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2]
}
