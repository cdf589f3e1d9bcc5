package cachex

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// batchLoader returns "v:<key>" for every key except those in missing, and
// records its calls.
type batchLoader struct {
	mu      sync.Mutex
	calls   [][]string
	missing map[string]bool
	err     error
}

func (b *batchLoader) load(_ context.Context, keys []string) (map[string]string, error) {
	b.mu.Lock()
	b.calls = append(b.calls, slices.Clone(keys))
	b.mu.Unlock()
	if b.err != nil {
		return nil, b.err
	}
	out := map[string]string{}
	for _, k := range keys {
		if !b.missing[k] {
			out[k] = "v:" + k
		}
	}
	return out, nil
}

func (b *batchLoader) callCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

func keysN(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("p%d", i)
	}
	return keys
}

// testGetMany checks the GetMany contract on any client: one read round trip
// per node, one loader call for all misses, one write-back pipeline, then
// hits.
func testGetMany(t *testing.T, rdb redis.UniversalClient, cmds *commands, nodes int) {
	ctx := context.Background()
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "many", TTL: time.Hour})
	keys := keysN(100)
	// 40 keys are cached already.
	warm := &batchLoader{}
	if _, err := c.GetMany(ctx, keys[:40], warm.load); err != nil {
		t.Fatal(err)
	}
	bl := &batchLoader{missing: map[string]bool{"p99": true}}
	cmds.reset()
	got, err := c.GetMany(ctx, append(keys, "p5"), bl.load) // a repeated key is read once
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 99 || got["p7"] != "v:p7" || got["p77"] != "v:p77" {
		t.Fatalf("GetMany returned %d values (p7=%q, p77=%q), want 99 (p99 does not exist)", len(got), got["p7"], got["p77"])
	}
	if _, ok := got["p99"]; ok {
		t.Fatal("a key the loader did not return is in the result")
	}
	if len(bl.calls) != 1 || len(bl.calls[0]) != 60 {
		t.Fatalf("loader calls %v, want one call with the 60 missing keys", bl.calls)
	}
	// Per node: the read, the leader's second read of what it will load
	// (see landWritten), and the write-back pipeline.
	if trips := cmds.roundTrips(); trips > 3*nodes {
		t.Fatalf("%d round trips, want at most %d (two reads and one write per node)", trips, 3*nodes)
	}
	cmds.reset()
	// Without NegativeTTL, p99 would be asked for again: leave it out.
	again, err := c.GetMany(ctx, keys[:99], (&batchLoader{err: errors.New("must not load")}).load)
	if err != nil || len(again) != 99 {
		t.Fatalf("second GetMany: %d values, %v", len(again), err)
	}
	if trips := cmds.roundTrips(); trips > nodes {
		t.Fatalf("all-hit GetMany took %d round trips, want at most %d", trips, nodes)
	}
}

func TestGetManySingleNode(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	cmds := &commands{}
	rdb.AddHook(cmds)
	testGetMany(t, rdb, cmds, 1)
	if cmds.count("mget") == 0 {
		t.Fatal("a single server should be read with MGET")
	}
}

func TestGetManyCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.RedisCluster(t, 3)
	opt := cl.Client.Options()
	opt.ContextTimeoutEnabled = true
	cmds := &commands{}
	opt.OnConnect = nil
	rdb := redis.NewClusterClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	// Count round trips per node: the cluster client splits a pipeline into
	// one per node, each through the node client's pipeline hook.
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(cmds) })
	if err := rdb.ForEachMaster(context.Background(), func(context.Context, *redis.Client) error { return nil }); err != nil {
		t.Fatal(err)
	}
	testGetMany(t, rdb, cmds, 3)
}

func TestGetCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.RedisCluster(t, 3)
	opt := cl.Client.Options()
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClusterClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	clk, rnd := newClock(), &fixedRand{}
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "cl", TTL: 10 * time.Second, now: clk.Now, noClockSync: true, rand: rnd.Float64})
	l := &loader{delay: 20 * time.Millisecond}
	for _, k := range keysN(30) {
		if v, err := c.Get(ctx, k, l.load); err != nil || v == "" {
			t.Fatalf("Get(%s) = %q, %v", k, v, err)
		}
	}
	// Early refresh (lock and guarded write, two keys in one slot) and
	// Invalidate work on the cluster too.
	clk.Add(10*time.Second - 10*time.Millisecond)
	rnd.set(0.99)
	if _, err := c.Get(ctx, "p3", l.load); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the early refresh", func() bool { return recomputes(c, reasonEarly, "ok") == 1 })
	c.Close()
	if err := c.Invalidate(ctx, keysN(30)...); err != nil {
		t.Fatal(err)
	}
	if n := redisErrors(c); n != 0 {
		t.Fatalf("%d Redis errors on the cluster (CROSSSLOT?)", n)
	}
}

func redisErrors[V any](c *Cache[V]) int {
	n := 0
	for _, op := range []string{"get", "set", "lock", "unlock", "del"} {
		n += int(counterOf(c.m.redisErrs.WithLabelValues(op)))
	}
	return n
}

func TestGetManyDeduplicatesWithConcurrentCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "many", TTL: time.Hour})
	release := make(chan struct{})
	var loaded atomic.Int64
	slow := func(_ context.Context, keys []string) (map[string]string, error) {
		loaded.Add(int64(len(keys)))
		<-release
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "v:" + k
		}
		return out, nil
	}
	keys := keysN(10)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			got, err := c.GetMany(ctx, keys, slow)
			if err != nil || len(got) != 10 {
				t.Errorf("GetMany: %d values, %v", len(got), err)
			}
		})
	}
	// A single Get of one of the keys joins the batch's recompute too.
	wg.Go(func() {
		v, err := c.Get(ctx, "p3", func(context.Context) (string, error) { loaded.Add(1); return "single", nil })
		if err != nil || v != "v:p3" && v != "single" {
			t.Errorf("Get = %q, %v", v, err)
		}
	})
	waitFor(t, "the batch load to start", func() bool { return loaded.Load() >= 10 })
	close(release)
	wg.Wait()
	if loaded.Load() != 10 {
		t.Fatalf("%d keys loaded for 5 concurrent GetMany of the same 10 keys (and a Get), want 10", loaded.Load())
	}
}

// A batch whose read missed a key that another recompute wrote before the
// batch joined its flight must not compute the key again: startMany is
// called here exactly as GetMany calls it after such a read.
func TestGetManyDoesNotRecomputeWhatLandedAfterItsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "many", TTL: time.Hour, NegativeTTL: time.Hour})
	first := &batchLoader{missing: map[string]bool{"gone": true}}
	if _, err := c.GetMany(ctx, []string{"a", "gone"}, first.load); err != nil {
		t.Fatal(err)
	}
	late := &batchLoader{}
	out := map[string]string{}
	keys := []string{"a", "gone", "b"} // as read before the first batch landed
	if err := c.waitMany(ctx, out, keys, c.startMany(ctx, keys, nil, nil, late.load, true)); err != nil {
		t.Fatal(err)
	}
	if len(late.calls) != 1 || !slices.Equal(late.calls[0], []string{"b"}) {
		t.Fatalf("late batch loaded %v, want only [b]", late.calls)
	}
	if want := map[string]string{"a": "v:a", "b": "v:b"}; !maps.Equal(out, want) {
		t.Fatalf("late batch returned %v, want %v", out, want)
	}
}

func TestGetManyStaleAndNegative(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	clk := newClock()
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "many", TTL: time.Second, Grace: time.Hour, NegativeTTL: time.Minute, now: clk.Now, noClockSync: true})
	bl := &batchLoader{missing: map[string]bool{"gone": true}}
	if _, err := c.GetMany(ctx, []string{"a", "b", "gone"}, bl.load); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Second) // a and b expired (within grace); gone's negative entry still fresh
	boom := errors.New("database down")
	got, err := c.GetMany(ctx, []string{"a", "b", "gone", "new"}, (&batchLoader{err: boom}).load)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the loader's error for the key with nothing to serve", err)
	}
	if got["a"] != "v:a" || got["b"] != "v:b" || len(got) != 2 {
		t.Fatalf("got %v, want the stale a and b only", got)
	}
	if gets(c, resultStale) != 2 {
		t.Fatalf("%d stale serves, want 2", gets(c, resultStale))
	}
}
