package lockx

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestAcquireExcludesAndTokensIncrease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	a, _ := newLocker(t, clients(t, node), Options{Name: "sku", TTL: 10 * time.Second, Wait: 50 * time.Millisecond})
	b, _ := newLocker(t, clients(t, node), Options{Name: "sku", TTL: 10 * time.Second, Wait: 50 * time.Millisecond})

	la, err := a.Acquire(ctx, "42")
	if err != nil {
		t.Fatal(err)
	}
	if la.Token() <= 0 {
		t.Fatalf("token %d, want > 0", la.Token())
	}
	// The key carries a relative expiry (PX), not an absolute one.
	if pttl := node.Client().PTTL(ctx, a.lockKey("42")).Val(); pttl <= 0 || pttl > 10*time.Second {
		t.Fatalf("lock key PTTL %v, want in (0, 10s]", pttl)
	}
	if _, err := b.Acquire(ctx, "42"); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second Acquire while held: %v, want ErrNotAcquired", err)
	}
	if _, err := b.Acquire(ctx, "other"); err != nil {
		t.Fatalf("another resource: %v", err)
	}
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(la.Context()), ErrReleased) {
		t.Fatalf("context cause after Release: %v, want ErrReleased", context.Cause(la.Context()))
	}
	lb, err := b.Acquire(ctx, "42")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("next holder's token %d is not above %d", lb.Token(), la.Token())
	}
	_ = lb.Release()
}

func TestAcquireReturnsContextError(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	l, reg := newLocker(t, clients(t, node), Options{Name: "ctx", TTL: 10 * time.Second, Wait: time.Minute})
	held, err := l.Acquire(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, "r"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire with an ending context: %v, want context.DeadlineExceeded", err)
	}
	if n := testutil.ToFloat64(l.m.failed); n != 1 {
		t.Fatalf("lockx_acquire_total{result=error} = %v, want 1", n)
	}
	_ = reg
}

func TestReleaseLeavesAnotherHoldersLockAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "own", TTL: 10 * time.Second, NoWatchdog: true})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	// The lock expired and someone else took it.
	rdb := node.Client()
	if err := rdb.Set(ctx, l.lockKey("r"), "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_ = lk.Release()
	if v := rdb.Get(ctx, l.lockKey("r")).Val(); v != "someone-else" {
		t.Fatalf("Release deleted another holder's lock (now %q)", v)
	}
}

// quickTTL and quickTimeout are for tests that must see the watchdog tick
// or a TTL run out: a tick every second, and each call to a server given
// 900ms (calls took more than 300ms on a 2-CPU machine busy with other
// work and CPU hogs beside the tests; a TTL of 1s allows no more).
const quickTTL, quickTimeout = 3 * time.Second, 900 * time.Millisecond

func TestWatchdogKeepsTheLockAlive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "dog", TTL: quickTTL, Timeout: quickTimeout})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "four extensions", time.Minute, func() bool { // > 1 TTL
		if lk.Context().Err() != nil {
			t.Fatalf("lock context ended while extended: %v", context.Cause(lk.Context()))
		}
		return testutil.ToFloat64(l.m.extOK) >= 4
	})
	if lk.Context().Err() != nil {
		t.Fatalf("lock context ended while extended: %v", context.Cause(lk.Context()))
	}
	if n := node.Client().Exists(ctx, l.lockKey("r")).Val(); n != 1 {
		t.Fatal("the lock key expired although the watchdog extends it")
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestExtensionThatFindsTheLockGoneLosesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "gone", TTL: quickTTL, Timeout: quickTimeout})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Client().Del(ctx, l.lockKey("r")).Err(); err != nil { // e.g. an operator, or a failover
		t.Fatal(err)
	}
	<-lk.Context().Done()
	if !errors.Is(context.Cause(lk.Context()), ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(lk.Context()))
	}
	if testutil.ToFloat64(l.m.extLost) != 1 || testutil.ToFloat64(l.m.lost) != 1 {
		t.Fatal("the loss was not counted")
	}
	if err := lk.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release of a lost lock: %v, want ErrLost", err)
	}
}

// TestPausedServerLosesTheLockBeforeItExpires: the holder's context ends
// before the key can expire on the frozen server, so before anyone else can
// take the lock. The safety margin (1.6s) is the time the test has, once
// told, to see the key still there.
func TestPausedServerLosesTheLockBeforeItExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	const ttl = 4 * time.Second
	l, _ := newLocker(t, clients(t, node), Options{Name: "pause", TTL: ttl, Timeout: quickTimeout, SafetyMargin: 1600 * time.Millisecond})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an extension", time.Minute, func() bool {
		if lk.Context().Err() != nil {
			t.Fatalf("lost before the server was paused: %v", context.Cause(lk.Context()))
		}
		return testutil.ToFloat64(l.m.extOK) >= 1
	})
	node.Pause()
	<-lk.Context().Done()
	node.Resume()
	if !errors.Is(context.Cause(lk.Context()), ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(lk.Context()))
	}
	// The server, frozen meanwhile, still holds the key: the holder was told
	// first, and nobody else can have acquired it yet.
	pttl := node.Client().PTTL(ctx, l.lockKey("r")).Val()
	if pttl <= 0 {
		t.Fatalf("the key had expired (PTTL %v) before the holder was told", pttl)
	}
	other, _ := newLocker(t, clients(t, node), Options{Name: "pause", TTL: ttl, Wait: 10 * time.Millisecond})
	if _, err := other.Acquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("another client acquired at the moment the holder was told: %v", err)
	}
	_ = lk.Release()
}

func TestNoGoroutineOutlivesRelease(t *testing.T) {
	ctx := context.Background()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "leak", TTL: quickTTL, Timeout: quickTimeout})
	// Warm up the client's pool and the locker so their goroutines exist.
	lk, err := l.Acquire(ctx, "warm")
	if err != nil {
		t.Fatal(err)
	}
	_ = lk.Release()
	before := runtime.NumGoroutine()
	for i := range 3 {
		lk, err := l.Acquire(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a watchdog tick", time.Minute, func() bool { return testutil.ToFloat64(l.m.extOK) > float64(i) })
		if err := lk.Release(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "goroutines back to the count before", time.Minute, func() bool { return runtime.NumGoroutine() <= before })
}

func TestDoReturnsTheFunctionsErrorAndTheLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "do", TTL: quickTTL, Timeout: quickTimeout})
	boom := errors.New("boom")
	var token int64
	err := l.Do(ctx, "r", func(ctx context.Context, tok int64) error { token = tok; return boom })
	if !errors.Is(err, boom) || token <= 0 {
		t.Fatalf("Do = %v with token %d, want boom and a token", err, token)
	}
	err = l.Do(ctx, "r", func(ctx context.Context, _ int64) error {
		_ = node.Client().Del(ctx, l.lockKey("r")).Err() // lost while fn runs
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Do with the lock lost inside: %v, want ErrLost", err)
	}
	if n := node.Client().Exists(ctx, l.lockKey("r")).Val(); n != 0 {
		t.Fatal("Do left the lock behind")
	}
}

func TestWaiterIsWokenByRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	// Backoff of 30-60s: a waiter that acquires within the test's 25s was
	// woken by the release, not by its timer.
	opts := Options{Name: "wake", TTL: 10 * time.Second, Wait: 2 * time.Minute, RetryMin: time.Minute, RetryMax: time.Minute}
	a, _ := newLocker(t, clients(t, node), opts)
	b, _ := newLocker(t, clients(t, node), opts)
	held, err := a.Acquire(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 25*time.Second)
		defer cancel()
		lk, err := b.Acquire(wctx, "hot")
		if err == nil {
			err = lk.Release()
		}
		got <- err
	}()
	waitFor(t, "the waiter to subscribe", time.Minute, func() bool {
		n, _ := node.Client().PubSubNumSub(ctx, channel(a.lockKey("hot"))).Result()
		return n[channel(a.lockKey("hot"))] == 1
	})
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v, want to acquire right after the release", err)
	}
}
