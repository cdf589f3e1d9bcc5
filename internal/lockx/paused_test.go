package lockx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// silentTimeout is the Timeout of the tests with a paused server: no call to
// it can end sooner, and what they check takes milliseconds (seconds on a
// loaded machine), so a call that has ended means that something waited for
// the paused server. It costs no time: the servers resume before the test
// ends, and their calls end then.
const silentTimeout = 20 * time.Second

// silentOptions are Options with silentTimeout and a TTL that allows it.
func silentOptions(name string) Options {
	return Options{Name: name, TTL: 4 * silentTimeout, Timeout: silentTimeout}
}

// A paused (not dead) server 0 of 3 stalls neither the waiter nor the
// wake-up subscription it needs: three Acquires of a held lock give up when
// Wait ends, before any call to the paused server has run out of time.
func TestPausedFirstServerDoesNotStallAWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 3)
	opts := silentOptions("paused")
	opts.Wait = 300 * time.Millisecond
	holder, _ := newLocker(t, clients(t, nodes...), opts)
	held, err := holder.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	var silent silentLog
	cs := append([]redis.UniversalClient{logged(t, nodes[0], silentTimeout, &silent)}, clients(t, nodes[1:]...)...)
	waiter, _ := newLocker(t, cs, opts) // it listens for wake-ups on server 0 too
	nodes[0].Pause()
	defer nodes[0].Resume()
	for i := range 3 {
		if _, err := waiter.Acquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire %d: %v, want ErrNotAcquired", i, err)
		}
	}
	if n := silent.ended.Load(); n != 0 {
		t.Fatalf("%d calls to the paused server had run out of time when the third Acquire returned: a waiter waited for it", n)
	}
}

// With one of three servers paused, uncontended acquisitions and releases
// never wait for it: 20 of them are done before any call to the paused
// server has run out of time, whether it is the first server (whose Pub/Sub
// wakes waiters) or the last.
func TestPausedMinorityCostsNoTimeout(t *testing.T) {
	t.Parallel()
	for _, paused := range []int{0, 2} {
		t.Run(fmt.Sprintf("server%d", paused), func(t *testing.T) {
			ctx := context.Background()
			nodes := redistest.RedisNodes(t, 3)
			var silent silentLog
			cs := clients(t, nodes...)
			cs[paused] = logged(t, nodes[paused], silentTimeout, &silent)
			l, _ := newLocker(t, cs, silentOptions("paused"))
			nodes[paused].Pause()
			defer nodes[paused].Resume()
			for i := range 20 {
				lk, err := l.Acquire(ctx, "free")
				if err != nil {
					t.Fatalf("acquisition %d: %v", i, err)
				}
				if err := lk.Release(); err != nil {
					t.Fatalf("release %d: %v", i, err)
				}
			}
			if n := silent.ended.Load(); n != 0 {
				t.Fatalf("%d calls to the paused server had run out of time after 20 acquisitions: one waited for it", n)
			}
		})
	}
}

// Server 0 of three is paused and server 2 holds the lock for someone else,
// so each attempt gets one yes (server 1), one no, and the paused server's
// vote would decide it. That vote is not waited for: Acquire retries, and
// takes the lock as soon as server 2 lets it go, while its first call to the
// paused server is still unanswered.
func TestASilentServersVoteIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 3)
	var silent silentLog
	cs := append([]redis.UniversalClient{logged(t, nodes[0], silentTimeout, &silent)}, clients(t, nodes[1:]...)...)
	opts := silentOptions("silent")
	opts.Wait, opts.RetryMax = time.Minute, 20*time.Millisecond
	l, _ := newLocker(t, cs, opts)
	key, other := l.lockKey("r"), nodes[2].Client()
	if err := other.Set(ctx, key, "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	nodes[0].Pause()
	defer nodes[0].Resume()
	got := acquireAsync(ctx, l, "r")
	waitFor(t, "three attempts", time.Minute, func() bool { return testutil.ToFloat64(l.m.attempts) >= 3 })
	if n := silent.ended.Load(); n != 0 {
		t.Fatalf("%d calls to the paused server had run out of time by the third attempt: an attempt waited for its vote", n)
	}
	if err := other.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	lk := get(t, got)
	defer lk.Release()
	if n := silent.ended.Load(); n != 0 {
		t.Fatalf("%d calls to the paused server had run out of time when Acquire took the freed lock", n)
	}
}

// contention is what one contended workload came to.
type contention struct {
	acquisitions, failed, slow int // slow: took at least Timeout
	bad                        int // failed or slow
	attempts                   float64
	waits                      []time.Duration
}

func (c contention) String() string {
	slices.Sort(c.waits)
	q := func(p float64) time.Duration { return c.waits[int(p*float64(len(c.waits)-1))] }
	return fmt.Sprintf("%d acquisitions, %d failed, %d took a Timeout or more, %.2f attempts each, wait p50 %v p99 %v max %v",
		c.acquisitions, c.failed, c.slow, c.attempts/float64(c.acquisitions), q(0.5).Round(time.Microsecond),
		q(0.99).Round(time.Microsecond), q(1).Round(time.Microsecond))
}

// contend makes 8 goroutines take 15 locks each on 3 resources, holding
// each for a millisecond.
func contend(l *Locker) contention {
	var (
		mu sync.Mutex
		c  contention
		wg sync.WaitGroup
	)
	before := testutil.ToFloat64(l.m.attempts)
	for g := range 8 {
		wg.Go(func() {
			for i := range 15 {
				start := time.Now()
				lk, err := l.Acquire(context.Background(), []string{"a", "b", "c"}[(g+i)%3])
				took := time.Since(start)
				if err == nil {
					time.Sleep(time.Millisecond) // the critical section
					err = lk.Release()
				}
				mu.Lock()
				c.acquisitions++
				c.waits = append(c.waits, took)
				if err != nil {
					c.failed++
				}
				if took >= l.opts.Timeout {
					c.slow++
				}
				if err != nil || took >= l.opts.Timeout {
					c.bad++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	c.attempts = testutil.ToFloat64(l.m.attempts) - before
	return c
}

// TestPausedMinorityUnderContention runs one contended workload on three
// trios of servers at once: a control without a fault, one with its first
// server paused (the one whose Pub/Sub wakes waiters) and one with its last.
// A paused server's vote is never waited for, so no more acquisitions fail
// or take its Timeout there than in the control (give or take one in fifty,
// for chance). What a paused server does cost, attempts and waits against
// the control's, is logged.
func TestPausedMinorityUnderContention(t *testing.T) {
	t.Parallel()
	opts := silentOptions("contended")
	opts.Wait, opts.NoWatchdog = 2*silentTimeout, true
	trios := []struct {
		name   string
		paused int // -1: none
		l      *Locker
		got    contention
	}{{name: "control", paused: -1}, {name: "server 0 paused", paused: 0}, {name: "server 2 paused", paused: 2}}
	for i := range trios {
		nodes := redistest.RedisNodes(t, 3)
		cs := make([]redis.UniversalClient, 3)
		for j, n := range nodes {
			cs[j] = client(t, n, silentTimeout)
		}
		trios[i].l, _ = newLocker(t, cs, opts)
		if p := trios[i].paused; p >= 0 {
			nodes[p].Pause()
			defer nodes[p].Resume()
		}
	}
	var wg sync.WaitGroup
	for i := range trios {
		wg.Go(func() { trios[i].got = contend(trios[i].l) })
	}
	wg.Wait()
	control := trios[0].got
	for _, tr := range trios {
		t.Logf("%s: %v", tr.name, tr.got)
	}
	for _, tr := range trios[1:] {
		if want := control.bad + tr.got.acquisitions/50; tr.got.bad > want {
			t.Errorf("%s: %d acquisitions failed or took a Timeout, want at most %d (the control's %d, plus one in fifty)",
				tr.name, tr.got.bad, want, control.bad)
		}
	}
}
