package cachex

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// source is the source of truth: a version that writers bump. Its loader
// reads the version when it starts and, while gate is open, waits before
// answering, as a slow query that read before a concurrent write would.
type source struct {
	version atomic.Int64
	reading atomic.Int64 // loads that have read the version
	gate    chan struct{}
}

func newSource() *source {
	s := &source{gate: make(chan struct{})}
	s.version.Store(1)
	return s
}

func (s *source) load(ctx context.Context) (string, error) {
	v := s.version.Load()
	s.reading.Add(1)
	select {
	case <-s.gate:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "v" + itoa(v), nil
}

func (s *source) loadMany(ctx context.Context, keys []string) (map[string]string, error) {
	v, err := s.load(ctx)
	out := map[string]string{}
	for _, k := range keys {
		out[k] = v
	}
	return out, err
}

// changeBeforeLock invalidates the key just before the first lock call,
// through inv: a cache of its own over a plain client, since a hook cannot
// wait for commands of the batch it runs in (an AutoPipeliner's).
type changeBeforeLock struct {
	inv  *Cache[string]
	done atomic.Bool
}

func (h *changeBeforeLock) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *changeBeforeLock) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := h.before(ctx, cmd); err != nil {
				return err
			}
		}
		return next(ctx, cmds)
	}
}
func (h *changeBeforeLock) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.before(ctx, cmd); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *changeBeforeLock) before(ctx context.Context, cmd redis.Cmder) error {
	if isLock(cmd) && h.done.CompareAndSwap(false, true) {
		return h.inv.Invalidate(ctx, "k")
	}
	return nil
}

// A load that started before Invalidate never lands after it, on any path:
// the loader reads the source, the source changes and Invalidate returns,
// then the loader answers with what it read; afterwards every read sees the
// new version.
func TestALoadStartedBeforeInvalidateNeverLandsAfterIt(t *testing.T) {
	t.Parallel()
	single := redistest.Redis(t)
	parent := t
	var cluster *redistest.Cluster
	paths := map[string]struct {
		opts    Options
		cluster bool
		prepare func(t *testing.T, c *Cache[string], rdb redis.UniversalClient)
		read    func(c *Cache[string], s *source) (string, error)
	}{
		"get under the lease": {opts: Options{}},
		"get without a lease": {opts: Options{noLease: true}},
		"get whose lock call failed": {opts: Options{}, prepare: func(t *testing.T, c *Cache[string], rdb redis.UniversalClient) {
			rdb.(*redis.Client).AddHook(failLocks{})
		}},
		"get after the lease wait gave up": {opts: Options{LeaseWait: 20 * time.Millisecond}, prepare: func(t *testing.T, c *Cache[string], rdb redis.UniversalClient) {
			rk := c.redisKey("k") // another instance holds the lock and never writes
			if err := rdb.Set(context.Background(), lockKey(rk), "other", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		"get whose key changed before its lock": {opts: Options{}, prepare: func(t *testing.T, c *Cache[string], rdb redis.UniversalClient) {
			// Between the read and the lock call the key changes (another
			// writer's Invalidate): the lock script answers "changed", the
			// re-read finds nothing fresh, and the load runs without the lock.
			opts := c.opts
			opts.Registerer = prometheus.NewRegistry()
			inv, err := New(client(t, single), JSON[string]{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(inv.Close)
			rdb.(*redis.Client).AddHook(&changeBeforeLock{inv: inv})
		}},
		"get under ttl":               {opts: Options{Strategy: TTL}},
		"batch":                       {opts: Options{}},
		"batch under ttl":             {opts: Options{Strategy: TTL}},
		"cluster get without a lease": {opts: Options{noLease: true}, cluster: true},
		"cluster batch":               {opts: Options{}, cluster: true},
	}
	for name, p := range paths {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var rdb redis.UniversalClient
			if p.cluster {
				if cluster == nil {
					cluster = redistest.RedisCluster(parent, 3) // shared by the cluster paths
				}
				opt := cluster.Client.Options()
				opt.ContextTimeoutEnabled = true
				cc := redis.NewClusterClient(opt)
				t.Cleanup(func() { _ = cc.Close() })
				rdb = cc
			} else {
				rdb = client(t, single)
			}
			opts := p.opts
			opts.Name, opts.Prefix, opts.TTL = "inv", "inv-"+itoa(time.Now().UnixNano())+":", time.Minute
			c, _ := newCache(t, rdb, JSON[string]{}, opts)
			if p.prepare != nil {
				p.prepare(t, c, rdb)
			}
			batch := name == "batch" || name == "batch under ttl" || name == "cluster batch"
			read := func(load func(context.Context) (string, error)) (string, error) {
				if !batch {
					return c.Get(ctx, "k", load)
				}
				got, err := c.GetMany(ctx, []string{"k"}, func(ctx context.Context, keys []string) (map[string]string, error) {
					v, err := load(ctx)
					return map[string]string{"k": v}, err
				})
				return got["k"], err
			}
			s := newSource()
			done := make(chan string, 1)
			go func() { v, _ := read(s.load); done <- v }()
			waitFor(t, "the load to read the source", func() bool { return s.reading.Load() == 1 })
			s.version.Store(2) // the write to the source of truth commits
			if err := c.Invalidate(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			// In this process, a read that starts now does not join the
			// load in flight: it loads version 2 while the old one waits.
			fresh := &source{gate: make(chan struct{})}
			fresh.version.Store(2)
			close(fresh.gate)
			if v, err := read(fresh.load); err != nil || v != "v2" {
				t.Fatalf("a read after Invalidate returned: %q, %v; want v2", v, err)
			}
			close(s.gate) // the old load answers with version 1 and tries to write it
			if v := <-done; v != "v1" {
				t.Fatalf("the read that started first got %q, want its own v1", v)
			}
			// Its write-back was refused and counted as discarded.
			waitFor(t, "the refused write-back to count as discarded", func() bool { return discards(c) == 1 })
			never := func(context.Context) (string, error) { return "v2", nil }
			for range 3 {
				if v, err := read(never); err != nil || v != "v2" {
					t.Fatalf("a read after the old load ended: %q, %v; want v2 (the old load wrote v1 back)", v, err)
				}
			}
		})
	}
}

// TestReadAfterInvalidateDoesNotJoinAnOlderLoad: instance A is loading a key
// (it read version 1); the source changes and instance B invalidates the key.
// A read on A that starts now sees B's tombstone, so it does not join A's
// older load: once that load has ended (one load per key at a time), it
// loads version 2. (Found by the stampede
// repository's torture checker: the cache workload's readers got
// version 929 after 930 had been written and invalidated.)
func TestReadAfterInvalidateDoesNotJoinAnOlderLoad(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "get", true: "batch"}[batch], func(t *testing.T) {
			ctx := context.Background()
			opts := Options{Name: "inv2", Prefix: "inv2-" + itoa(time.Now().UnixNano()) + ":", TTL: time.Minute}
			a, _ := newCache(t, client(t, node), JSON[string]{}, opts)
			b, _ := newCache(t, client(t, node), JSON[string]{}, opts)
			read := func(ctx context.Context, load func(context.Context) (string, error)) (string, error) {
				if !batch {
					return a.Get(ctx, "k", load)
				}
				got, err := a.GetMany(ctx, []string{"k"}, func(ctx context.Context, keys []string) (map[string]string, error) {
					v, err := load(ctx)
					return map[string]string{"k": v}, err
				})
				return got["k"], err
			}
			s := newSource()
			done := make(chan string, 1)
			go func() { v, _ := read(ctx, s.load); done <- v }()
			waitFor(t, "the load to read the source", func() bool { return s.reading.Load() == 1 })
			s.version.Store(2)
			if err := b.Invalidate(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			fresh := &source{gate: make(chan struct{})}
			fresh.version.Store(2)
			close(fresh.gate)
			rctx, cancel := context.WithTimeout(ctx, eventWait)
			defer cancel()
			late := make(chan string, 1)
			go func() {
				v, err := read(rctx, fresh.load)
				if err != nil {
					v = err.Error()
				}
				late <- v
			}()
			select {
			case v := <-late:
				t.Fatalf("the later read answered %q while the older load still ran", v)
			case <-time.After(100 * time.Millisecond):
			}
			close(s.gate)
			if v := <-done; v != "v1" {
				t.Errorf("the read that started first got %q, want its own v1", v)
			}
			if v := <-late; v != "v2" {
				t.Errorf("a read after another instance's Invalidate returned %q, want v2", v)
			}
		})
	}
}
