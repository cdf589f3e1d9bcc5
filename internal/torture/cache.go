package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// CacheConfig is a run of the cache workload: writers update rows in
// Postgres and invalidate them; readers read them (Get and GetMany) through
// two cachex instances, whose clocks disagree by Skew during clock_skew
// faults, over a 3-master Redis Cluster with a proxy in front of each master.
type CacheConfig struct {
	Seed     uint64
	Duration time.Duration
	// Keys are the rows; Readers and Writers the goroutines.
	Keys, Readers, Writers int
	// TTL of the cache; Skew is how far the second instance's clock jumps
	// ahead of the first's during a clock_skew fault.
	TTL, Skew time.Duration
	// Unsafe reads through a naive cache instead: on a miss it loads, waits
	// and writes the value back with a plain SET, unguarded; the checker must
	// then find stale reads after invalidations. With Near, the near caches
	// drop Redis's invalidation pushes instead.
	Unsafe bool
	// Near, when positive, runs the near-cache variant: one standalone Redis
	// (go-redis has client-side caching there only) behind a proxy, and each
	// instance's client with a near cache whose MaxStaleness is Near. Reads
	// through the instance that did not invalidate are checked for bounded
	// staleness instead (checkCache).
	Near time.Duration
	// Faults, when not nil, replaces the schedule drawn from Seed.
	Faults []Fault
}

// cacheMasters is the size of the cache's Redis Cluster.
const cacheMasters = 3

func (c *CacheConfig) defaults() {
	if c.Keys == 0 {
		c.Keys = 5
	}
	if c.Readers == 0 {
		c.Readers = 6
	}
	if c.Writers == 0 {
		c.Writers = 2
	}
	if c.TTL == 0 {
		c.TTL = 2 * time.Second
	}
	if c.Skew == 0 {
		c.Skew = 3 * time.Second
	}
}

// cacheTimeout is the workload's cachex Timeout: a Redis call that takes
// longer is bypassed, and the reader loads by itself.
const cacheTimeout = 100 * time.Millisecond

// cacheOp is one recorded read or write.
type cacheOp struct {
	key        int
	inst       int // the instance read through; writes invalidate through 0
	write      bool
	version    int64 // written, or read
	start, end time.Time
	err        error
}

// RunCache runs the cache workload and checks its history: a read that
// began after an Invalidate returned never returns a version older than the
// write before it, and no Redis fault surfaces as a read error.
func RunCache(ctx context.Context, cfg CacheConfig) (*Result, error) {
	cfg.defaults()
	env := &Env{}
	defer env.Close()
	masters := cacheMasters
	startRedis := func() []*testenv.RedisNode { return testenv.RedisCluster(env, cacheMasters).Nodes }
	if cfg.Near > 0 {
		masters, startRedis = 1, func() []*testenv.RedisNode { return testenv.RedisNodes(env, 1) }
	}
	srv, err := startServers(ctx, env, startRedis,
		`CREATE TABLE torture_items (id integer PRIMARY KEY, version bigint NOT NULL DEFAULT 0);
		INSERT INTO torture_items (id) SELECT generate_series(0, `+strconv.Itoa(cfg.Keys-1)+`);`)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	db := srv.db
	// The cluster client learns the masters' own addresses from the cluster
	// and is sent through their proxies.
	proxyOf := map[string]string{}
	var seeds []string
	for i, n := range srv.nodes {
		proxyOf[n.Addr()] = srv.px.list[i].Listen
		seeds = append(seeds, srv.px.list[i].Listen)
	}
	var (
		readers    []cacheReader
		invalidate func(context.Context, int) error
		skew       atomic.Int64 // the second instance's clock offset, in ns
		failed     = &redisErrors{reg: prometheus.NewRegistry()}
	)
	for i := range 2 {
		rdb := cacheClient(cfg, seeds, proxyOf)
		defer rdb.Close()
		now := time.Now
		if i == 1 {
			now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		}
		c, err := cachex.New(rdb, cachex.JSON[int64]{}, cachex.Options{Name: "torture" + strconv.Itoa(i), Prefix: "torture:",
			TTL: cfg.TTL, Timeout: cacheTimeout, Registerer: failed.reg}, cachex.WithClock(now))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		defer c.Close()
		if cfg.Unsafe && cfg.Near == 0 {
			readers = append(readers, naiveReader(rdb, cfg.TTL))
		} else {
			readers = append(readers, cachexReader(c))
		}
		if invalidate == nil {
			invalidate = func(ctx context.Context, key int) error {
				if cfg.Unsafe && cfg.Near == 0 {
					return rdb.Del(ctx, "naive:{"+strconv.Itoa(key)+"}").Err()
				}
				return c.Invalidate(ctx, strconv.Itoa(key))
			}
		}
	}
	in := srv.injector(env)
	in.onClockSkew = func(on bool) {
		skew.Store(0)
		if on {
			skew.Store(int64(cfg.Skew))
		}
	}
	// Not snapshot: a cache server restored from an old snapshot serves what
	// it held then, which no client can tell from a fresh value
	// (docs/torture.md). Not client_pause: the readers hold no lock. Not
	// restart: a cluster node restarted empty has forgotten its slots and
	// needs an operator to rejoin the cluster.
	// The near-cache variant's one server can restart empty: what a near
	// cache must not outlive.
	kinds := []Kind{FaultLatency, FaultTimeout, FaultResetPeer, FaultSlowClose, FaultBandwidth, FaultPause, FaultClockSkew}
	if cfg.Near > 0 {
		kinds = append(kinds, FaultRestart)
	}
	faults := scheduleOr(cfg.Faults, cfg.Seed, cfg.Duration, masters, kinds)

	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	start := time.Now()
	var (
		ops   history[cacheOp]
		loads history[cacheOp] // every call of the loader: key and start
		wg    sync.WaitGroup
		lag   lagMonitor
	)
	wg.Go(func() { lag.run(runCtx) })
	wg.Go(func() { failed.run(runCtx) })
	for w := range cfg.Writers {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(1000+w)))
		wg.Go(func() {
			for runCtx.Err() == nil {
				op := cacheOp{key: r.IntN(cfg.Keys), write: true, start: time.Now()}
				if err := db.QueryRow(runCtx, "UPDATE torture_items SET version = version + 1 WHERE id = $1 RETURNING version", op.key).Scan(&op.version); err != nil {
					continue
				}
				// Invalidate until it succeeds, as a writer must: its write
				// counts for the check only from then on.
				for {
					if op.err = invalidate(runCtx, op.key); op.err == nil || runCtx.Err() != nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				op.end = time.Now()
				if op.err == nil {
					ops.add(op)
				}
				time.Sleep(time.Duration(r.IntN(100)) * time.Millisecond)
			}
		})
	}
	load := func(ctx context.Context, keys []int) (map[int]int64, error) {
		now := time.Now()
		for _, k := range keys {
			loads.add(cacheOp{key: k, start: now})
		}
		rows, err := db.Query(ctx, "SELECT id, version FROM torture_items WHERE id = ANY($1)", keys)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[int]int64{}
		for rows.Next() {
			var k int
			var v int64
			if err := rows.Scan(&k, &v); err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, rows.Err()
	}
	for i := range cfg.Readers {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		inst := i % len(readers)
		read := readers[inst]
		wg.Go(func() {
			for runCtx.Err() == nil {
				keys := []int{r.IntN(cfg.Keys)} // Get, or GetMany of three keys every other read
				if r.IntN(2) == 0 {
					keys = append(keys, r.IntN(cfg.Keys), r.IntN(cfg.Keys))
				}
				began := time.Now()
				got, err := read(runCtx, keys, load)
				ended := time.Now()
				if runCtx.Err() == nil {
					for _, k := range keys {
						ops.add(cacheOp{key: k, inst: inst, version: got[k], start: began, end: ended, err: err})
					}
				}
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
			}
		})
	}
	recs := in.run(runCtx, start, faults)
	wg.Wait()

	res := &Result{Workload: "cache", Seed: cfg.Seed, Duration: time.Since(start), Faults: recs, Ops: map[string]int{},
		Checks: []string{"no stale read after an invalidation", "no Redis fault surfaces as a read error", "about one recompute per key per TTL while healthy"}}
	if cfg.Near > 0 {
		res.Checks = append(res.Checks, checkBoundedName)
	}
	return checkCacheRun(res, ops.all(), loads.all(), start, cfg, &lag, failed), nil
}

// checkCacheRun adds to res what a cache run did and the checks' findings.
func checkCacheRun(res *Result, ops, loads []cacheOp, start time.Time, cfg CacheConfig, lag *lagMonitor, failed *redisErrors) *Result {
	for _, op := range ops {
		switch {
		case op.write:
			res.Ops["write"]++
		case op.err != nil:
			res.Ops["read_error"]++
		default:
			res.Ops["read"]++
		}
	}
	w := checkRecomputes(ops, loads, res.Faults, start, start.Add(res.Duration), cfg.TTL, lag, failed)
	res.Ops["load"], res.Ops["quiet_ttl_windows"], res.Ops["stalled_ttl_windows"] = len(loads), w.quiet, w.stalled
	res.Ops["scheduling_lag_max_ms"] = int(lag.worst().Milliseconds())
	stale, staleness := checkCache(ops, nearCheckBound(cfg.Near))
	res.Anomalies = capAnomalies(append(stale, w.anomalies...))
	if cfg.Near > 0 {
		res.Ops["stale_reads"] = len(staleness)
		for name, q := range map[string]float64{"staleness_p50_us": 0.5, "staleness_p99_us": 0.99, "staleness_max_us": 1} {
			res.Ops[name] = int(quantile(staleness, q).Microseconds())
		}
	}
	return res
}

// cacheReader reads keys through a cache, loading misses with load.
type cacheReader func(ctx context.Context, keys []int, load func(context.Context, []int) (map[int]int64, error)) (map[int]int64, error)

// cachexReader reads one key with Get and several with GetMany.
func cachexReader(c *cachex.Cache[int64]) cacheReader {
	return func(ctx context.Context, keys []int, load func(context.Context, []int) (map[int]int64, error)) (map[int]int64, error) {
		if len(keys) == 1 {
			v, err := c.Get(ctx, strconv.Itoa(keys[0]), func(ctx context.Context) (int64, error) {
				m, err := load(ctx, keys)
				return m[keys[0]], err
			})
			return map[int]int64{keys[0]: v}, err
		}
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = strconv.Itoa(k)
		}
		got, err := c.GetMany(ctx, names, func(ctx context.Context, miss []string) (map[string]int64, error) {
			ids := make([]int, len(miss))
			for i, s := range miss {
				ids[i], _ = strconv.Atoi(s)
			}
			m, err := load(ctx, ids)
			out := make(map[string]int64, len(m))
			for k, v := range m {
				out[strconv.Itoa(k)] = v
			}
			return out, err
		})
		out := make(map[int]int64, len(got))
		for s, v := range got {
			k, _ := strconv.Atoi(s)
			out[k] = v
		}
		return out, err
	}
}

// naiveReader is the cache the checker must catch: read Redis; on a miss,
// load, wait a little (as a slow loader would) and write the value back with
// a plain SET, even if the row changed and was invalidated meanwhile.
func naiveReader(rdb redis.UniversalClient, ttl time.Duration) cacheReader {
	return func(ctx context.Context, keys []int, load func(context.Context, []int) (map[int]int64, error)) (map[int]int64, error) {
		out := map[int]int64{}
		for _, key := range keys {
			k := "naive:{" + strconv.Itoa(key) + "}"
			if v, err := rdb.Get(ctx, k).Int64(); err == nil {
				out[key] = v
				continue
			}
			m, err := load(ctx, []int{key})
			if err != nil {
				return out, err
			}
			time.Sleep(30 * time.Millisecond)
			_ = rdb.Set(ctx, k, m[key], ttl).Err()
			out[key] = m[key]
		}
		return out, nil
	}
}
