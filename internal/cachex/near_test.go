package cachex

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// nearClient returns a client of node with a near cache (go-redis
// client-side caching) whose entries live at most maxStaleness.
func nearClient(t testing.TB, node *redistest.Node, maxStaleness time.Duration) *redis.Client {
	t.Helper()
	opt := node.Options()
	opt.ContextTimeoutEnabled = true
	opt.Protocol = 3
	opt.ClientSideCacheConfig = &redis.ClientSideCacheConfig{MaxEntries: 1000, MaxStaleness: maxStaleness}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serverGets returns how many GETs the server has run (INFO commandstats).
func serverGets(t testing.TB, node *redistest.Node) int {
	t.Helper()
	rdb := client(t, node)
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_get:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}

// versioned is a source whose value of every key is its version, which
// bump raises.
type versioned struct{ v atomic.Int64 }

func (s *versioned) load(context.Context) (int64, error) { return s.v.Load(), nil }
func (s *versioned) bump() int64                         { return s.v.Add(1) }

// nearPair returns two instances of one cache (same name and keys), each
// with a near cache of its own.
func nearPair(t *testing.T, node *redistest.Node, maxStaleness time.Duration) (a, b *Cache[int64]) {
	t.Helper()
	opts := Options{Name: "near", TTL: time.Hour}
	a, _ = newCache(t, nearClient(t, node, maxStaleness), JSON[int64]{}, opts)
	b, _ = newCache(t, nearClient(t, node, maxStaleness), JSON[int64]{}, opts)
	if a.near == nil || b.near == nil {
		t.Fatal("a client with client-side caching gave a cache without a near cache")
	}
	return a, b
}

// TestNearCacheServesHitsWithoutARoundTrip: once a key is read, its hits
// come from process memory: the server runs no GET for them.
func TestNearCacheServesHitsWithoutARoundTrip(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	src := &versioned{}
	src.bump()
	a, _ := nearPair(t, node, time.Minute)
	ctx := context.Background()
	if v, err := a.Get(ctx, "k", src.load); err != nil || v != 1 {
		t.Fatalf("first read: %v %v", v, err)
	}
	waitFor(t, "a hit from the near cache", func() bool {
		before := serverGets(t, node)
		_, err := a.Get(ctx, "k", src.load)
		return err == nil && serverGets(t, node) == before
	})
	before := serverGets(t, node)
	for range 50 {
		if v, err := a.Get(ctx, "k", src.load); err != nil || v != 1 {
			t.Fatalf("hit: %v %v", v, err)
		}
	}
	if n := serverGets(t, node) - before; n != 0 {
		t.Errorf("50 hits ran %d GETs on the server, want 0", n)
	}
	if n := gets(a, resultHit); n < 50 {
		t.Errorf("%d hits counted, want at least 50", n)
	}
}

// TestNearCacheReadsItsOwnInvalidate: right after an instance's Invalidate
// its own reads never return the old value (they go to the server until the
// invalidation's push is surely applied), and the other instance's reads
// return the new value once its push arrives.
func TestNearCacheReadsItsOwnInvalidate(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	src := &versioned{}
	src.bump()
	a, b := nearPair(t, node, time.Minute)
	ctx := context.Background()
	for _, c := range []*Cache[int64]{a, b, a, b} { // both hold version 1 in memory
		if v, err := c.Get(ctx, "k", src.load); err != nil || v != 1 {
			t.Fatalf("read: %v %v", v, err)
		}
	}
	for want := int64(2); want < 20; want++ {
		src.bump()
		if err := b.Invalidate(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if v, err := b.Get(ctx, "k", src.load); err != nil || v != want {
			t.Fatalf("the invalidating instance read %v %v right after its Invalidate, want %d", v, err, want)
		}
		waitFor(t, "the other instance to apply the invalidation", func() bool {
			v, err := a.Get(ctx, "k", src.load)
			return err == nil && v == want
		})
	}
}

// TestNearCacheFollowsTheServerThroughFaults: after each fault (a pause, a
// kill and restart empty, a restart from an old snapshot) the value another
// instance writes reaches this instance's reads: the near cache never keeps
// serving what the server no longer holds.
func TestNearCacheFollowsTheServerThroughFaults(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	src := &versioned{}
	src.bump()
	a, b := nearPair(t, node, 2*time.Second)
	ctx := context.Background()
	faults := []struct {
		name  string
		apply func()
	}{
		{"pause", func() { node.Pause(); time.Sleep(300 * time.Millisecond); node.Resume() }},
		{"restart empty", node.Restart},
		{"restart from a snapshot", func() { node.Snapshot(); node.RestartFromSnapshot() }},
	}
	for _, f := range faults {
		if _, err := a.Get(ctx, "k", src.load); err != nil { // in a's memory now
			t.Fatal(err)
		}
		f.apply()
		want := src.bump()
		waitFor(t, f.name+": the other instance's Invalidate to succeed", func() bool { return b.Invalidate(ctx, "k") == nil })
		waitFor(t, f.name+": the new value to reach the reads", func() bool {
			v, err := a.Get(ctx, "k", src.load)
			return err == nil && v == want
		})
	}
}

// TestNewRefusesANearCacheWithoutABound: go-redis keeps an entry whose
// invalidation was lost forever unless MaxStaleness is set, so New wants it.
func TestNewRefusesANearCacheWithoutABound(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	_, err := New(nearClient(t, node, 0), JSON[int64]{}, Options{Name: "near", TTL: time.Hour})
	if !errors.Is(err, errNearBound) {
		t.Errorf("New = %v, want %v", err, errNearBound)
	}
}

// TestNearCacheCollectorCountsWhatTheClientDid: hits, entries and the
// invalidations applied are read from the client.
func TestNearCacheCollectorCountsWhatTheClientDid(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	cfg := redis.ClientSideCacheConfig{MaxEntries: 100, MaxStaleness: time.Minute}
	opt := node.Options()
	opt.ContextTimeoutEnabled, opt.Protocol = true, 3
	opt.ClientSideCache, opt.ClientSideCacheConfig = redis.NewLocalCache(cfg), &cfg
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	reg := prometheus.NewRegistry()
	reg.MustRegister(NearCacheCollector(rdb, "test"))
	src := &versioned{}
	c, _ := newCache(t, rdb, JSON[int64]{}, Options{Name: "near", TTL: time.Hour})
	other, _ := nearPair(t, node, time.Minute)
	ctx := context.Background()
	for range 3 {
		if _, err := c.Get(ctx, "k", src.load); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Invalidate(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, counts := opt.ClientSideCache.(interface{ InvalidationStats() uint64 }); counts { // go-redis v9.23+
		waitFor(t, "the invalidation to be applied", func() bool {
			_, _ = c.Get(ctx, "k", src.load) // a read on a busy connection picks the push up
			return gatheredAll(t, reg)["cachex_near_invalidations_total"] >= 1
		})
	}
	waitFor(t, "the value to be held again", func() bool {
		_, _ = c.Get(ctx, "k", src.load)
		m := gatheredAll(t, reg)
		return m["cachex_near_entries"] >= 1 && m["cachex_near_bytes"] >= 1
	})
	m := gatheredAll(t, reg)
	for _, name := range []string{"cachex_near_hits_total", "cachex_near_misses_total"} {
		if m[name] < 1 {
			t.Errorf("%s = %v, want at least 1", name, m[name])
		}
	}
}

// gatheredAll returns the value of every single-series metric in reg.
func gatheredAll(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) != 1 {
			continue
		}
		m := mf.GetMetric()[0]
		out[mf.GetName()] = m.GetGauge().GetValue()
		if c := m.GetCounter(); c != nil {
			out[mf.GetName()] = c.GetValue()
		}
	}
	return out
}
