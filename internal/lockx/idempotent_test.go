package lockx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The acquire script ran but its reply was lost, and the client sent it
// again (go-redis's retry after a read timeout): the second run finds the
// lock set to the caller's own holder token, and that is a success, with
// the token the first run issued.
func TestAcquireAfterALostReplyAndARetryHoldsTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	var l *Locker
	retried := false
	client := hooked(t, node, func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if runs(cmd, l.scripts.acquire) && !retried {
			retried = true
			if err := next(ctx, cmd); err != nil { // runs; its reply is lost
				return err
			}
		}
		return next(ctx, cmd)
	})
	l, _ = newLocker(t, []redis.UniversalClient{client}, Options{Name: "idem", TTL: 10 * time.Second, Wait: time.Minute})
	loadScripts(t, l, rdb)
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatalf("Acquire after a retried attempt: %v", err)
	}
	defer lk.Release()
	if n := testutil.ToFloat64(l.m.attempts); n != 1 {
		t.Errorf("%v attempts, want 1", n)
	}
	key := l.lockKey("r")
	if fence, _ := rdb.Get(ctx, fenceKey(key)).Int64(); lk.Token() != fence {
		t.Errorf("token %d, want the one the first run issued (%d)", lk.Token(), fence)
	}
	if got := rdb.Get(ctx, key).Val(); got != lk.holder {
		t.Errorf("lock key %q, want the holder's %q", got, lk.holder)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl <= 5*time.Second {
		t.Errorf("PTTL %v, want the TTL renewed (10s)", pttl)
	}
}

// An attempt that timed out on the client but ran on the server later
// (after its clean-up, so the lock stays set to the holder) is picked up by
// the next attempt of the same Acquire instead of blocking it for a TTL:
// Acquire holds the lock after two attempts.
func TestAcquireAdoptsAnAttemptThatRanLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	var l *Locker
	var late redis.Cmder
	client := hooked(t, node, func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		switch {
		case runs(cmd, l.scripts.acquire) && late == nil:
			late = cmd // held back: the server has not seen it yet
			return context.DeadlineExceeded
		case runs(cmd, l.scripts.release) && late != nil:
			// The clean-up overtakes the attempt; then the attempt lands.
			err := next(ctx, cmd)
			_ = next(ctx, late)
			return err
		}
		return next(ctx, cmd)
	})
	l, _ = newLocker(t, []redis.UniversalClient{client}, Options{Name: "idem", TTL: 10 * time.Second, Wait: time.Minute})
	loadScripts(t, l, rdb)
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatalf("Acquire after an attempt that ran late: %v", err)
	}
	defer lk.Release()
	if late == nil {
		t.Fatal("no attempt was held back")
	}
	if n := testutil.ToFloat64(l.m.attempts); n != 2 {
		t.Errorf("%v attempts, want 2: the second one finds the late attempt's lock its own", n)
	}
	if got := rdb.Get(ctx, l.lockKey("r")).Val(); got != lk.holder {
		t.Errorf("lock key %q, want the holder's %q", got, lk.holder)
	}
	other, _ := newLocker(t, clients(t, node), Options{Name: "idem", TTL: 10 * time.Second})
	if _, err := other.TryAcquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
		t.Errorf("another client's TryAcquire: %v, want ErrNotAcquired", err)
	}
}
