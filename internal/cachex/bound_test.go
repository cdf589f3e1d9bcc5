package cachex

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// TestUnansweringHostCallsEndAtTimeout: with an ordinary client (read and
// write timeouts equal to Timeout, a dial timeout of its own), a Get
// against a host that never answers, or a Redis that is paused, is served
// from the loader, its call to Redis ended by the cache's Timeout. The
// caller waits up to a minute: a call bounded only by the client's dial
// timeout (10 min here) would outlast that, and the GET is counted as a
// Redis failure only if it ended while the caller still waited.
func TestUnansweringHostCallsEndAtTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	ordinary := func(o *redis.Options) {
		o.ContextTimeoutEnabled = true
		o.ReadTimeout, o.WriteTimeout, o.DialTimeout = timeout, timeout, 10*time.Minute
	}
	paused := redistest.New(t)
	redistest.Must(t, paused.Pause())
	t.Cleanup(func() { _ = paused.Resume() })
	for name, addr := range map[string]string{"unanswering host": redistest.Unanswering(t), "paused Redis": paused.Addr()} {
		t.Run(name, func(t *testing.T) {
			o := &redis.Options{Addr: addr}
			ordinary(o)
			rdb := redis.NewClient(o)
			defer rdb.Close()
			c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "bound", TTL: time.Minute, Timeout: timeout, BreakerFailures: 1000})
			ctx, cancel := context.WithTimeout(context.Background(), eventWait)
			defer cancel()
			l := &loader{}
			if v, err := c.Get(ctx, redistest.Key(t)+"k", l.load); err != nil || v == "" {
				t.Fatalf("Get = %q, %v; want the loader's value", v, err)
			}
			if n := counterOf(c.m.redisErrs.WithLabelValues("get")); n != 1 || ctx.Err() != nil {
				t.Fatalf("%v GETs failed with the caller still waiting (caller's context: %v), want 1 ended by the cache's Timeout", n, ctx.Err())
			}
		})
	}
}

// TestNewRefusesAClientWithoutDeadlines: a client that ignores context
// deadlines could hold a call for its own timeouts and retries, whatever
// they are, so New refuses it, and an AutoPipeliner of it, and says what to
// set.
func TestNewRefusesAClientWithoutDeadlines(t *testing.T) {
	t.Parallel()
	clients := map[string]redis.UniversalClient{
		"client":  redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond}),
		"cluster": redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
		"ring":    redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}),
	}
	for name, rdb := range clients {
		defer rdb.Close()
		kinds := map[string]redis.UniversalClient{"": rdb}
		if ap, err := rdb.AutoPipeline(); err == nil { // a Ring has none
			kinds["'s AutoPipeliner"] = ap
		}
		if ap, err := rdb.AsyncAutoPipeline(); err == nil {
			kinds["'s AsyncAutoPipeliner"] = ap
		}
		for kind, c := range kinds {
			_, err := New(c, JSON[string]{}, Options{Name: "refused", TTL: time.Minute})
			if err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
				t.Errorf("%s%s without ContextTimeoutEnabled: %v, want an error naming it", name, kind, err)
			}
		}
	}
}

// TestNewAcceptsAClientWithDeadlines: the same clients with
// ContextTimeoutEnabled, and their AutoPipeliners, are accepted, so the
// refusal above is the option's doing.
func TestNewAcceptsAClientWithDeadlines(t *testing.T) {
	t.Parallel()
	clients := map[string]redis.UniversalClient{
		"client":  redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}),
		"cluster": redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}),
		"ring":    redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, ContextTimeoutEnabled: true}),
	}
	for name, rdb := range clients {
		defer rdb.Close()
		kinds := map[string]redis.UniversalClient{"": rdb}
		if ap, err := rdb.AutoPipeline(); err == nil { // a Ring has none
			kinds["'s AutoPipeliner"] = ap
		}
		for kind, c := range kinds {
			opts := Options{Name: "accepted", TTL: time.Minute, Registerer: prometheus.NewRegistry(), noClockSync: true}
			cache, err := New(c, JSON[string]{}, opts)
			if err != nil {
				t.Errorf("%s%s with ContextTimeoutEnabled: %v", name, kind, err)
				continue
			}
			cache.Close()
		}
	}
}

// TestNewAcceptsTheRedistestClient: redistest.Client, the helper the tests
// (and a copier's) use, builds a client New accepts, and the cache reads
// and writes through it.
func TestNewAcceptsTheRedistestClient(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redistest.New(t))
	c, err := New(rdb, JSON[string]{}, Options{Name: "redistest", TTL: time.Minute, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("New over redistest.Client: %v", err)
	}
	defer c.Close()
	l := &loader{}
	key := redistest.Key(t) + "k"
	for range 2 {
		if v, err := c.Get(context.Background(), key, l.load); err != nil || v == "" {
			t.Fatalf("Get = %q, %v", v, err)
		}
	}
	if n := l.calls.Load(); n != 1 {
		t.Fatalf("%d loader calls for two reads, want 1: the value did not reach Redis", n)
	}
}
