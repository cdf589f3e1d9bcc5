package lockx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// generous are client options that, without a deadline, let one call take
// seconds: long dial timeout, many dial attempts and retries, a long pool
// wait.
func generous(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           5 * time.Second,
		DialerRetries:         10,
		MaxRetries:            5,
		PoolSize:              1,
		PoolTimeout:           5 * time.Second,
	}
}

// Every server call is bounded by Timeout, whatever the client's own
// timeouts and retries: against a server that drops connection attempts,
// one that refuses them, and one that is paused.
func TestEveryCallIsBoundedByTimeout(t *testing.T) {
	ctx := context.Background()
	const timeout, slack = 50 * time.Millisecond, 100 * time.Millisecond
	paused := testenv.RedisNodes(t, 1)[0]
	for name, addr := range map[string]string{
		"dropping": droppingAddr(t),
		"refusing": refusingAddr(t),
		"paused":   paused.Addr(),
	} {
		t.Run(name, func(t *testing.T) {
			rdb := redis.NewClient(generous(addr))
			t.Cleanup(func() { _ = rdb.Close() })
			if name == "paused" {
				paused.Pause()
				defer paused.Resume()
			}
			l, _ := newLocker(t, []redis.UniversalClient{rdb}, Options{Name: "bounded", TTL: time.Second, Timeout: timeout, Wait: 200 * time.Millisecond})
			for range 3 {
				within(t, "TryAcquire", timeout+slack, func() {
					if _, err := l.TryAcquire(ctx, "r"); !errors.Is(err, ErrUnavailable) {
						t.Fatalf("TryAcquire: %v, want ErrUnavailable", err)
					}
				})
			}
			within(t, "Acquire", 200*time.Millisecond+timeout+slack, func() {
				if _, err := l.Acquire(ctx, "r"); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Acquire: %v, want ErrUnavailable", err)
				}
			})
		})
	}
}

// A Redlock quorum with one server unreachable (attempts dropped) acquires,
// extends and releases on the other two.
func TestRedlockWithAnUnreachableServer(t *testing.T) {
	ctx := context.Background()
	live := testenv.RedisNodes(t, 2)
	const timeout = 100 * time.Millisecond
	nodes := []redis.UniversalClient{redis.NewClient(generous(droppingAddr(t)))}
	nodes = append(nodes, clients(t, live...)...)
	l, _ := newLocker(t, nodes, Options{Name: "bounded", TTL: 600 * time.Millisecond, Timeout: timeout})
	for i := range 10 {
		within(t, "acquire and release", timeout, func() {
			lk, err := l.Acquire(ctx, "r")
			if err != nil {
				t.Fatalf("acquisition %d: %v", i, err)
			}
			if err := lk.Release(); err != nil {
				t.Fatalf("release %d: %v", i, err)
			}
		})
	}
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "four extensions (more than a TTL)", 5*time.Second, func() bool { return testutil.ToFloat64(l.m.extOK) >= 4 })
	if lk.Context().Err() != nil {
		t.Fatalf("lost with two of three servers live: %v", context.Cause(lk.Context()))
	}
	_ = lk.Release()
}

// New refuses a client that ignores context deadlines: a paused server
// could hold its calls for the client's ReadTimeout and retries.
func TestNewRefusesAClientThatIgnoresDeadlines(t *testing.T) {
	node := testenv.Redis(t)
	opt := node.Options()
	opt.ContextTimeoutEnabled = false
	opt.ReadTimeout, opt.WriteTimeout = 10*time.Millisecond, 10*time.Millisecond // within Timeout: still refused
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	_, err := New([]redis.UniversalClient{rdb}, Options{Name: "bounded", TTL: time.Second})
	if err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
		t.Fatalf("New with a client that ignores deadlines: %v, want an error naming ContextTimeoutEnabled", err)
	}
}
