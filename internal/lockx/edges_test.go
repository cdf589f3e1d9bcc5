package lockx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The watchdog's first extension goes out TTL/3 after the attempt and may
// take Timeout: a SafetyMargin that would tell the holder the lock is lost
// before it can be back is refused.
func TestNewRefusesASafetyMarginWithoutRoomForTheFirstExtension(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	opts := Options{Name: "edge", TTL: 300 * time.Millisecond, Timeout: 90 * time.Millisecond, SafetyMargin: 110 * time.Millisecond}
	if _, err := New(clients(t, node), opts); err == nil || !strings.Contains(err.Error(), "first extension") {
		t.Fatalf("New: %v, want it refused for leaving no time for the first extension", err)
	}
	opts.NoWatchdog = true // no extension to wait for
	if _, err := New(clients(t, node), opts); err != nil {
		t.Fatalf("New without the watchdog: %v", err)
	}
}

// A quorum won so slowly that less than SafetyMargin of validity is left is
// not a lock: the holder would be told at once that it is lost. A reply
// 300ms late leaves at most 3s - drift (32ms) - 300ms = 2.668s, below the
// margin of 2.9s; a loaded machine only makes it later. The call's Timeout
// (990ms) leaves it 690ms more to answer.
func TestAQuorumWonTooLateIsNotALock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	var l *Locker
	client := hooked(t, node, func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		err := next(ctx, cmd)
		if runs(cmd, l.scripts.acquire) {
			time.Sleep(300 * time.Millisecond) // a slow reply
		}
		return err
	})
	l, _ = newLocker(t, []redis.UniversalClient{client}, Options{Name: "edge", TTL: 3 * time.Second,
		Timeout: 990 * time.Millisecond, SafetyMargin: 2900 * time.Millisecond, NoWatchdog: true})
	loadScripts(t, l, rdb)
	if lk, err := l.TryAcquire(ctx, "r"); lk != nil || !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("TryAcquire with a slow reply: %v, %v; want no lock and ErrNotAcquired", lk, err)
	}
	waitFor(t, "the attempt's clean-up", time.Minute, func() bool { return rdb.Exists(ctx, l.lockKey("r")).Val() == 0 })
}

// Acquire returns at most Timeout after Wait, also when it leaves the
// HandOver queue of a paused server on its way out. What would break it
// (a clean-up or the leaving waited for) costs another Timeout: the bound
// allows half of one for a loaded machine.
func TestAcquireOverrunsWaitByAtMostTimeout(t *testing.T) {
	const wait, timeout = 500 * time.Millisecond, 2 * time.Second
	for _, handOver := range []bool{false, true} {
		t.Run(fmt.Sprintf("HandOver=%v", handOver), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			node := redistest.RedisNodes(t, 1)[0]
			l, _ := newLocker(t, clients(t, node), Options{Name: "edge", TTL: 10 * time.Second, Wait: wait, Timeout: timeout, HandOver: handOver})
			held, err := l.Acquire(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			node.Pause()
			defer node.Resume()
			start := time.Now()
			if _, err := l.Acquire(ctx, "r"); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Acquire: %v, want ErrUnavailable", err)
			}
			if took, limit := time.Since(start), wait+timeout+timeout/2; took >= limit {
				t.Fatalf("Acquire on a paused server took %v, want less than Wait + 1.5 Timeout (%v)", took, limit)
			}
			node.Resume()
			_ = held.Release()
		})
	}
}

// TryAcquire makes one attempt: a held lock is ErrNotAcquired at once.
func TestTryAcquireMakesOneAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "edge", TTL: 10 * time.Second, Wait: time.Minute})
	held, err := l.TryAcquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(l.m.attempts)
	if _, err := l.TryAcquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held lock: %v, want ErrNotAcquired", err)
	}
	if n := testutil.ToFloat64(l.m.attempts) - before; n != 1 {
		t.Fatalf("%v attempts, want 1", n)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	lk, err := l.TryAcquire(ctx, "r")
	if err != nil {
		t.Fatalf("TryAcquire after the release: %v", err)
	}
	_ = lk.Release()
}

// Release needs no live context: a request that ended still releases its
// lock.
func TestReleaseAfterTheRequestEnded(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	l, _ := newLocker(t, clients(t, node), Options{Name: "edge", TTL: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-lk.Context().Done()
	if err := lk.Release(); err != nil {
		t.Fatalf("Release after the request's context ended: %v", err)
	}
	if n := node.Client().Exists(context.Background(), l.lockKey("r")).Val(); n != 0 {
		t.Fatal("the lock is still set after Release")
	}
}

// lockx_held_seconds observes a lost lock when it is lost, once.
func TestHeldSecondsObservesLostLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	l, reg := newLocker(t, clients(t, node), Options{Name: "edge", TTL: quickTTL, Timeout: quickTimeout})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	_ = node.Client().Del(ctx, l.lockKey("r")).Err()
	<-lk.Context().Done()
	if n := heldCount(t, reg); n != 1 {
		t.Fatalf("lockx_held_seconds count %d after the loss, want 1", n)
	}
	_ = lk.Release()
	if n := heldCount(t, reg); n != 1 {
		t.Fatalf("lockx_held_seconds count %d after Release of the lost lock, want still 1", n)
	}
}

func heldCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "lockx_held_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}
