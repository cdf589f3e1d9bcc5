package cachex

import (
	"context"
	"strings"
	"testing"
	"time"

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
// they are, so New refuses it and says what to set.
func TestNewRefusesAClientWithoutDeadlines(t *testing.T) {
	t.Parallel()
	for name, rdb := range map[string]redis.UniversalClient{
		"client":  redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond}),
		"cluster": redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
		"ring":    redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}),
	} {
		_, err := New(rdb, JSON[string]{}, Options{Name: "refused", TTL: time.Minute})
		if err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
			t.Errorf("%s without ContextTimeoutEnabled: %v, want an error naming it", name, err)
		}
		_ = rdb.Close()
	}
}
