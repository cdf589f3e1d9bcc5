package lockx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// unbounded is the least time a call to a server that drops, refuses or
// does not answer takes with generous options when its deadline does not
// cut it off: a dial timeout, a pause between dial attempts, a read timeout.
const unbounded = 5 * time.Second

// generousClient returns a client of addr whose own options, without a
// deadline, let one call take at least unbounded: long dial, read and write
// timeouts, many dial attempts and retries with long pauses between them, a
// long pool wait. It is closed in the background when the test ends: an
// AutoPipeliner's Close waits for the batches still trying to reach the
// server, which only those options end, and that is not what is tested.
func generousClient(t *testing.T, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           unbounded,
		ReadTimeout:           unbounded,
		WriteTimeout:          unbounded,
		DialerRetries:         10,
		DialerRetryTimeout:    unbounded,
		MaxRetries:            5,
		MinRetryBackoff:       unbounded,
		MaxRetryBackoff:       unbounded,
		PoolSize:              1,
		PoolTimeout:           unbounded,
	})
	t.Cleanup(func() { go rdb.Close() })
	return rdb
}

// returnsBefore fails the test unless f returns before limit has passed.
func returnsBefore(t *testing.T, what string, limit time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took >= limit {
		t.Fatalf("%s took %v: a call was not cut off at its deadline (the client's own limits take %v or more)", what, took, limit)
	}
}

// Every server call is bounded by Timeout, whatever the client's own
// timeouts and retries: against a server that drops connection attempts,
// one that refuses them, and one that is paused, TryAcquire and Acquire end
// at lockx's deadlines (Timeout 100ms), long before the client's own limits
// (unbounded, 5s) could end them.
func TestEveryCallIsBoundedByTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const timeout, wait = 100 * time.Millisecond, 200 * time.Millisecond
	paused := redistest.RedisNodes(t, 1)[0]
	for name, addr := range map[string]string{
		"dropping": droppingAddr(t),
		"refusing": refusingAddr(t),
		"paused":   paused.Addr(),
	} {
		t.Run(name, func(t *testing.T) {
			rdb := generousClient(t, addr)
			if name == "paused" {
				paused.Pause()
				defer paused.Resume()
			}
			l, _ := newLocker(t, []redis.UniversalClient{rdb}, Options{Name: "bounded", TTL: time.Second, Timeout: timeout, Wait: wait})
			for range 3 {
				returnsBefore(t, "TryAcquire", unbounded, func() {
					if _, err := l.TryAcquire(ctx, "r"); !errors.Is(err, ErrUnavailable) {
						t.Fatalf("TryAcquire: %v, want ErrUnavailable", err)
					}
				})
			}
			returnsBefore(t, "Acquire", wait+unbounded, func() {
				if _, err := l.Acquire(ctx, "r"); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("Acquire: %v, want ErrUnavailable", err)
				}
			})
		})
	}
}

// A Redlock quorum with one server unreachable (attempts dropped) acquires
// and releases on the other two before any call to it has run out of time,
// and its watchdog keeps the lock.
func TestRedlockWithAnUnreachableServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	live := redistest.RedisNodes(t, 2)
	var silent silentLog
	dropping := generousClient(t, droppingAddr(t))
	dropping.AddHook(scriptHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		defer silent.ended.Add(1)
		return next(ctx, cmd)
	}))
	nodes := append([]redis.UniversalClient{dropping}, clients(t, live...)...)
	// Its calls cannot be answered, only run out of time, and the Locker's
	// Close waits for them (up to twice Timeout after the last Release): a
	// Timeout shorter than silentTimeout keeps that short (the watchdog's
	// part below takes most of it), and still far more than three
	// acquisitions need.
	const timeout = 2 * time.Second
	l, _ := newLocker(t, nodes, Options{Name: "bounded", TTL: 4 * timeout, Timeout: timeout})
	for i := range 3 {
		lk, err := l.Acquire(ctx, "r")
		if err != nil {
			t.Fatalf("acquisition %d: %v", i, err)
		}
		if err := lk.Release(); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	if n := silent.ended.Load(); n != 0 {
		t.Fatalf("%d calls to the unreachable server had run out of time after 3 acquisitions: one waited for it", n)
	}
	l, _ = newLocker(t, nodes, Options{Name: "bounded", TTL: quickTTL, Timeout: quickTimeout})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "four extensions (more than a TTL)", time.Minute, func() bool { return testutil.ToFloat64(l.m.extOK) >= 4 })
	if lk.Context().Err() != nil {
		t.Fatalf("lost with two of three servers live: %v", context.Cause(lk.Context()))
	}
	_ = lk.Release()
}

// New refuses a client that ignores context deadlines, and an
// AutoPipeliner of one: a paused server could hold its calls for the
// client's ReadTimeout and retries.
func TestNewRefusesAClientThatIgnoresDeadlines(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	opt := node.Options()
	opt.ContextTimeoutEnabled = false
	opt.ReadTimeout, opt.WriteTimeout = 10*time.Millisecond, 10*time.Millisecond // within Timeout: still refused
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{node.Addr()}})
	t.Cleanup(func() { _ = cluster.Close() })
	kinds := map[string]redis.UniversalClient{"client": rdb}
	for name, c := range map[string]redis.UniversalClient{"client": rdb, "cluster": cluster} {
		ap, err := c.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		async, err := c.AsyncAutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		kinds[name+"'s AutoPipeliner"], kinds[name+"'s AsyncAutoPipeliner"] = ap, async
	}
	for name, c := range kinds {
		_, err := New([]redis.UniversalClient{c}, Options{Name: "bounded", TTL: time.Second})
		if err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
			t.Errorf("New with a %s that ignores deadlines: %v, want an error naming ContextTimeoutEnabled", name, err)
		}
	}
}

// TestNewAcceptsTheRedistestClient: redistest.Client, the helper the tests
// (and a copier's) use, builds a client New accepts, as is its
// AutoPipeliner, and a lock is taken through it.
func TestNewAcceptsTheRedistestClient(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t, redistest.New(t))
	ap, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]redis.UniversalClient{"client": rdb, "AutoPipeliner": ap} {
		l, err := New([]redis.UniversalClient{c}, Options{Name: "redistest", TTL: time.Second, Registerer: prometheus.NewRegistry()})
		if err != nil {
			t.Fatalf("New over redistest.Client's %s: %v", name, err)
		}
		lk, err := l.TryAcquire(context.Background(), redistest.Key(t)+"r")
		if err != nil {
			t.Fatalf("TryAcquire over redistest.Client's %s: %v", name, err)
		}
		_ = lk.Release()
		_ = l.Close()
	}
}
