package lockbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/testenv"
)

const (
	// ttl is the lock TTL where a library takes one; the others keep their
	// defaults (redsync 8s, rueidislock 5s). Nothing is held long enough to
	// be extended.
	ttl = 10 * time.Second
	// timeout is lockx's default per-call Timeout for ttl, and the go-redis
	// clients' read and write timeouts.
	timeout = ttl / 10
	// parallelism multiplies GOMAXPROCS into RunParallel's goroutines: 32
	// on 2 CPUs, enough callers at once for auto-pipelining to batch.
	parallelism = 16
	// keysPerG is how many resources each goroutine takes in turn: no two
	// goroutines share one, so no acquisition waits, and Redis keeps a
	// bounded set of keys (lockx's fence counters never expire).
	keysPerG = 64
)

// body takes and releases the lock on one resource; it returns an error
// rather than failing, as RunParallel's goroutines may not call Fatal.
type body func(ctx context.Context, key string) error

type side struct {
	name string
	take body
	keys [][]string // keys[g][i]: goroutine g's i-th resource
}

func newSide(name, prefix string, take body) side {
	keys := make([][]string, parallelism*runtime.GOMAXPROCS(0))
	for g := range keys {
		keys[g] = make([]string, keysPerG)
		for i := range keys[g] {
			keys[g][i] = prefix + strconv.Itoa(g) + ":" + strconv.Itoa(i)
		}
	}
	return side{name: name, take: take, keys: keys}
}

// BenchmarkPeerAcquireRelease takes and releases a lock on a resource
// nobody else holds, each library as its documentation shows it, on the
// same private Redis servers, the go-redis based ones through the same
// clients (ContextTimeoutEnabled, read and write timeouts of 1s, go-redis's
// default pool):
//
//   - raw: SET NX PX with a random token, then a compare-and-delete script
//     by SHA: the floor; raw-ap the same through the clients'
//     AutoPipeliner;
//   - lockx-ap, lockx-3nodes-ap: lockx over the AutoPipeliners;
//   - lockx: internal/lockx on one server, default Options (TTL 10s): a
//     fencing token, a watchdog, metrics;
//   - lockx-3nodes: the same on a Redlock quorum of three servers;
//   - redislock: github.com/bsm/redislock, Obtain and Release (no retry);
//   - redsync: github.com/go-redsync/redsync/v4 with its go-redis v9 pool,
//     NewMutex, Lock and Unlock, defaults;
//   - redsync-3nodes: the same on three servers;
//   - rueidislock: github.com/redis/rueidis/rueidislock, WithContext and its
//     cancel, with KeyMajority 1 and NoLoopTracking, as its README shows for
//     one server (rueidis's own client and connection), and TryNextAfter
//     raised to 1s (see rueidislockSide).
//
// Every resource is taken once before the timer starts.
func BenchmarkPeerAcquireRelease(b *testing.B) {
	nodes := testenv.RedisNodes(b, 3)
	rdbs := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		opt := n.Options()
		opt.ContextTimeoutEnabled = true
		opt.ReadTimeout, opt.WriteTimeout = timeout, timeout
		c := redis.NewClient(opt)
		b.Cleanup(func() { _ = c.Close() })
		rdbs[i] = c
	}
	aps := make([]redis.UniversalClient, len(rdbs))
	for i, c := range rdbs {
		ap, err := c.AutoPipeline()
		if err != nil {
			b.Fatal(err)
		}
		aps[i] = ap
	}
	sides := []side{
		newSide("raw", "raw:", rawSide(rdbs[0])),
		newSide("raw-ap", "rawap:", rawSide(aps[0])),
		newSide("lockx", "", lockxSide(b, rdbs[:1])),
		newSide("lockx-ap", "ap:", lockxSide(b, aps[:1])),
		newSide("lockx-3nodes", "", lockxSide(b, rdbs)),
		newSide("lockx-3nodes-ap", "ap:", lockxSide(b, aps)),
		newSide("redislock", "redislock:", redislockSide(rdbs[0])),
		newSide("redsync", "redsync:", redsyncSide(rdbs[:1])),
		newSide("redsync-3nodes", "redsync3:", redsyncSide(rdbs)),
		newSide("rueidislock", "", rueidislockSide(b, nodes[0].Addr())),
	}
	for _, s := range sides {
		for _, keys := range s.keys {
			for _, k := range keys {
				if err := s.take(context.Background(), k); err != nil {
					b.Fatalf("%s: warm up: %v", s.name, err)
				}
			}
		}
	}
	for _, mode := range []string{"seq", "parallel"} {
		for _, s := range sides {
			b.Run(s.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "seq" {
					ctx := context.Background()
					keys := s.keys[0]
					for i := 0; b.Loop(); i++ {
						if err := s.take(ctx, keys[i%len(keys)]); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(parallelism)
				var next atomic.Int64
				var failed atomic.Pointer[error]
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					keys := s.keys[int(next.Add(1)-1)%len(s.keys)]
					for i := 0; pb.Next(); i++ {
						if err := s.take(ctx, keys[i%len(keys)]); err != nil {
							failed.CompareAndSwap(nil, &err)
							return
						}
					}
				})
				if err := failed.Load(); err != nil {
					b.Fatal(*err)
				}
			})
		}
	}
}

// rawRelease is the compare-and-delete every correct Redis lock releases
// with.
var rawRelease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// rawSide is SET key token NX PX ttl and the compare-and-delete by SHA, with
// a random 16-byte token as lockx makes it: two round trips.
func rawSide(rdb redis.UniversalClient) body {
	ms := ttl.Milliseconds()
	return func(ctx context.Context, key string) error {
		token := rand16()
		set := redis.NewBoolCmd(ctx, "set", key, token, "px", ms, "nx")
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

// rand16 is a random holder token: 16 bytes from crypto/rand in hex, as
// lockx makes its own.
func rand16() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lockxSide acquires and releases through a lockx Locker over nodes.
func lockxSide(b *testing.B, nodes []redis.UniversalClient) body {
	l, err := lockx.New(nodes, lockx.Options{
		Name:       "peer" + strconv.Itoa(len(nodes)),
		TTL:        ttl,
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return func(ctx context.Context, key string) error {
		lk, err := l.Acquire(ctx, key)
		if err != nil {
			return err
		}
		return lk.Release()
	}
}

// redislockSide obtains with bsm/redislock's defaults (no retry) and
// releases.
func redislockSide(rdb redis.UniversalClient) body {
	c := redislock.New(rdb)
	return func(ctx context.Context, key string) error {
		lk, err := c.Obtain(ctx, key, ttl, nil)
		if err != nil {
			return err
		}
		return lk.Release(ctx)
	}
}

// redsyncSide locks a new redsync Mutex per acquisition, as redsync's README
// does, over one go-redis pool per node.
func redsyncSide(nodes []redis.UniversalClient) body {
	pools := make([]redsyncredis.Pool, len(nodes))
	for i, n := range nodes {
		pools[i] = redsyncgoredis.NewPool(n)
	}
	rs := redsync.New(pools...)
	return func(ctx context.Context, key string) error {
		m := rs.NewMutex(key)
		if err := m.LockContext(ctx); err != nil {
			return err
		}
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = fmt.Errorf("redsync: %s was not held at unlock", key)
		}
		return err
	}
}

// rueidislockSide takes a lock with rueidislock's WithContext and releases
// it with the returned cancel, which returns once the key is deleted.
//
// TryNextAfter, the deadline of one attempt on one key, is raised from 20ms
// to 1s. With the default, a reply slower than 20ms (on this busy machine,
// once in a while) fails the attempt, and WithContext then waits for a
// client-side-caching invalidation of the key before it tries again; when
// none comes (the attempt's SET never landed, or it landed and this same
// client deleted it, which NOLOOP keeps from notifying it) it waits for as
// long as its context lasts: a run hung for ten minutes that way. With one
// key (KeyMajority 1) the option changes nothing else.
func rueidislockSide(b *testing.B, addr string) body {
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,    // one server
		NoLoopTracking: true, // Redis >= 7.0.5
		TryNextAfter:   time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(locker.Close)
	return func(ctx context.Context, key string) error {
		_, cancel, err := locker.WithContext(ctx, key)
		if err != nil {
			return err
		}
		cancel()
		return nil
	}
}
