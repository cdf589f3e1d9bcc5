package lockx

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// handOverLocker is a HandOver Locker on node with a 10s TTL.
func handOverLocker(t *testing.T, node *redistest.Node, wait time.Duration) *Locker {
	l, _ := newLocker(t, clients(t, node), Options{Name: "ho", TTL: 10 * time.Second, Wait: wait, HandOver: true})
	return l
}

// queued returns the holder tokens queued for resource, first first.
func queued(t *testing.T, rdb *redis.Client, l *Locker, resource string) []string {
	t.Helper()
	q, err := rdb.ZRange(context.Background(), queueKeys(l.lockKey(resource))[2], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// enqueue puts a waiter that is not listening (crashed, or about to give up)
// on resource's queue, with its deadline in server milliseconds.
func enqueue(t *testing.T, rdb *redis.Client, l *Locker, resource, holder string, arrival float64, deadline int64) {
	t.Helper()
	keys := queueKeys(l.lockKey(resource))
	ctx := context.Background()
	if err := rdb.ZAdd(ctx, keys[2], redis.Z{Score: arrival, Member: holder}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, keys[3], holder, deadline).Err(); err != nil {
		t.Fatal(err)
	}
}

// farFuture is a queue deadline that never passes in a test.
const farFuture = int64(1) << 50

type acquired struct {
	lk  *Lock
	err error
}

func acquireAsync(ctx context.Context, l *Locker, resource string) <-chan acquired {
	out := make(chan acquired, 1)
	go func() {
		lk, err := l.Acquire(ctx, resource)
		out <- acquired{lk, err}
	}()
	return out
}

// get waits for an asynchronous Acquire and fails the test on an error.
func get(t *testing.T, ch <-chan acquired) *Lock {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.lk
	case <-time.After(time.Minute):
		t.Fatal("Acquire did not return within a minute")
		return nil
	}
}

// Waiters get the lock in the order they queued, straight from Release: the
// release script sets the lock to the next waiter's token.
func TestHandOverGoesToWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	holder := handOverLocker(t, node, time.Second)
	b, c := handOverLocker(t, node, time.Minute), handOverLocker(t, node, time.Minute)
	la, err := holder.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	chB := acquireAsync(ctx, b, "r")
	waitFor(t, "b to queue", time.Minute, func() bool { return len(queued(t, node.Client(), b, "r")) == 1 })
	chC := acquireAsync(ctx, c, "r")
	waitFor(t, "c to queue", time.Minute, func() bool { return len(queued(t, node.Client(), b, "r")) == 2 })
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	// The release itself gave the lock to b: it is set before b does anything.
	after := node.Client().Get(ctx, holder.lockKey("r")).Val()
	lb := get(t, chB)
	if after != lb.holder {
		t.Fatalf("right after the release the lock was %q, want b's token %q (handed over)", after, lb.holder)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("b's token %d is not above %d", lb.Token(), la.Token())
	}
	select {
	case a := <-chC:
		t.Fatalf("c acquired (%v) while b holds the lock", a.err)
	default:
	}
	if q := queued(t, node.Client(), b, "r"); len(q) != 1 {
		t.Fatalf("queue after the first hand-over: %v, want only c", q)
	}
	if err := lb.Release(); err != nil {
		t.Fatal(err)
	}
	lc := get(t, chC)
	if lc.Token() <= lb.Token() {
		t.Fatalf("c's token %d is not above %d", lc.Token(), lb.Token())
	}
	if err := lc.Release(); err != nil {
		t.Fatal(err)
	}
	if n := node.Client().Exists(ctx, holder.lockKey("r")).Val(); n != 0 {
		t.Fatalf("lock key still exists after the last release with nobody queued")
	}
}

// A waiter that gives up (its Wait ends, or its context) leaves the queue;
// the next release hands nothing to it and the lock is free.
func TestHandOverForgetsAWaiterThatGaveUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	a := handOverLocker(t, node, time.Second)
	la, err := a.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	short := handOverLocker(t, node, 100*time.Millisecond)
	if _, err := short.Acquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire while held: %v, want ErrNotAcquired", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	ch := acquireAsync(cctx, handOverLocker(t, node, time.Minute), "r")
	waitFor(t, "the second waiter to queue", time.Minute, func() bool { return len(queued(t, node.Client(), a, "r")) == 1 })
	cancel()
	if r := <-ch; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v, want context.Canceled", r.err)
	}
	if q := queued(t, node.Client(), a, "r"); len(q) != 0 {
		t.Fatalf("queue after both waiters gave up: %v, want empty", q)
	}
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	if n := node.Client().Exists(ctx, a.lockKey("r")).Val(); n != 0 {
		t.Fatal("the lock was handed to a waiter that had given up")
	}
}

// A queued waiter whose deadline has passed (it crashed, or its process
// lost its connection) is skipped; one that is handed the lock as it gives
// up passes it on when it leaves.
func TestHandOverSkipsExpiredWaitersAndPassesOnWhenLeaving(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	a := handOverLocker(t, node, time.Second)
	la, err := a.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, rdb, a, "r", "dead", 1, 1)            // first in line, deadline long past
	enqueue(t, rdb, a, "r", "leaving", 2, farFuture) // next: will give up just after the hand-over
	ch := acquireAsync(ctx, handOverLocker(t, node, time.Minute), "r")
	waitFor(t, "the live waiter to queue", time.Minute, func() bool { return len(queued(t, rdb, a, "r")) == 3 })

	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, a.lockKey("r")).Val(); got != "leaving" {
		t.Fatalf("lock after the release: %q, want it handed to %q (the dead waiter skipped)", got, "leaving")
	}
	if n := rdb.HExists(ctx, queueKeys(a.lockKey("r"))[3], "dead").Val(); n {
		t.Fatal("the dead waiter's deadline is still stored")
	}
	_, _ = a.releaseOn(ctx, a.lockKey("r"), "leaving", 0) // what its Acquire does when it gives up
	lk := get(t, ch)
	if lk.Token() <= la.Token() {
		t.Fatalf("token %d is not above %d", lk.Token(), la.Token())
	}
	if got := rdb.Get(ctx, a.lockKey("r")).Val(); got != lk.holder {
		t.Fatalf("lock %q, want the live waiter's %q", got, lk.holder)
	}
	_ = lk.Release()
}

// A waiter that missed the hand-over's message (its subscription was not in
// place yet, or Pub/Sub failed) finds the lock set to its token on its next
// attempt and holds it from then on, with a fresh TTL and the token the
// hand-over issued.
func TestHandOverWithoutTheMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	a := handOverLocker(t, node, time.Second)
	la, err := a.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, rdb, a, "r", "deaf", 1, farFuture)
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	key := a.lockKey("r")
	if err := rdb.PExpire(ctx, key, time.Second).Err(); err != nil { // time has passed since the hand-over
		t.Fatal(err)
	}
	lk, err := (&acquisition{l: a, key: key, holder: "deaf", deadline: time.Now().Add(time.Second)}).attempt(ctx)
	if err != nil || lk == nil {
		t.Fatalf("attempt after a missed hand-over: %v, %v", lk, err)
	}
	if fence, _ := rdb.Get(ctx, fenceKey(key)).Int64(); lk.Token() != fence || lk.Token() <= la.Token() {
		t.Fatalf("token %d, want the hand-over's %d (above %d)", lk.Token(), fence, la.Token())
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl <= 5*time.Second {
		t.Fatalf("PTTL %v after the attempt, want the TTL renewed (10s)", pttl)
	}
	if q := queued(t, rdb, a, "r"); len(q) != 0 {
		t.Fatalf("queue %v, want empty", q)
	}
}

// A lock handed to a waiter that crashed after queueing sits idle until its
// TTL runs out (the cost Options.HandOver documents), then the next waiter
// takes it.
func TestHandOverToACrashedWaiterCostsOneTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	l, _ := newLocker(t, clients(t, node), Options{Name: "ho", TTL: quickTTL, Timeout: quickTimeout, Wait: time.Minute, HandOver: true})
	la, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, rdb, l, "r", "crashed", 1, farFuture)
	ch := acquireAsync(ctx, l, "r")
	waitFor(t, "the live waiter to queue", time.Minute, func() bool { return len(queued(t, rdb, l, "r")) == 2 })
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, l.lockKey("r")).Val(); got != "crashed" {
		t.Fatalf("lock after the release: %q, want it handed to the crashed waiter", got)
	}
	lk := get(t, ch) // after the crashed waiter's lock expired
	if lk.Token() <= la.Token()+1 {
		t.Fatalf("token %d, want above the crashed waiter's %d", lk.Token(), la.Token()+1)
	}
	_ = lk.Release()
}

func TestHandOverNeedsOneServer(t *testing.T) {
	t.Parallel()
	nodes := clients(t, redistest.Redis(t), redistest.Redis(t))
	_, err := New(nodes, Options{Name: "ho", HandOver: true})
	if err == nil || !strings.Contains(err.Error(), "single server") {
		t.Fatalf("New with HandOver on 2 servers: %v, want an error", err)
	}
}

// A waiter handed the lock gets it from the release's message, with no
// attempt of its own (its pauses between attempts are a minute long).
func TestHandOverNeedsNoAttemptOfTheWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	opts := Options{Name: "ho", TTL: 10 * time.Second, Wait: 2 * time.Minute, HandOver: true, RetryMin: time.Minute, RetryMax: time.Minute}
	a, _ := newLocker(t, clients(t, node), opts)
	b, _ := newLocker(t, clients(t, node), opts)
	la, err := a.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	ch := acquireAsync(ctx, b, "r")
	waitFor(t, "b to queue and listen", time.Minute, func() bool {
		sub := channel(a.lockKey("r"))
		return len(queued(t, node.Client(), a, "r")) == 1 && node.Client().PubSubNumSub(ctx, sub).Val()[sub] == 1
	})
	attempts := testutil.ToFloat64(b.m.attempts)
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	lb := get(t, ch)
	if n := testutil.ToFloat64(b.m.attempts) - attempts; n != 0 {
		t.Fatalf("b made %v attempts after the release; it should have been handed the lock", n)
	}
	_ = lb.Release()
}

// A waiter handed the lock long after its last attempt cannot count on the
// TTL the hand-over set (it does not know when that was, only that it was
// after the attempt): when the attempt is older than the watchdog can cover,
// the lock is extended once before Acquire returns and its validity counts
// from the extension; after a recent attempt it is not. The moment of the
// last attempt is an argument of handedOver, so no time has to pass.
func TestHandOverExtendsWhenTheLastAttemptIsOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	var (
		l          *Locker
		extensions atomic.Int64
	)
	c := hooked(t, node, func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if runs(cmd, l.scripts.extend) {
			extensions.Add(1)
		}
		return next(ctx, cmd)
	})
	const ttl = 10 * time.Second
	l, _ = newLocker(t, []redis.UniversalClient{c}, Options{Name: "ho", TTL: ttl, HandOver: true})
	loadScripts(t, l, rdb)
	key := l.lockKey("r")
	for _, tc := range []struct {
		name     string
		age      time.Duration // of the waiter's last attempt
		extended int64
	}{{"recent attempt", 0, 0}, {"attempt 2/3 TTL old", ttl * 2 / 3, 1}} {
		// The release set the lock to the waiter's token with a full TTL.
		if err := rdb.Set(ctx, key, "waiter", ttl).Err(); err != nil {
			t.Fatal(err)
		}
		before := extensions.Load()
		now := time.Now()
		lk := l.handedOver(ctx, key, "waiter", 42, now.Add(-tc.age))
		if lk == nil {
			t.Fatalf("%s: no lock from a hand-over", tc.name)
		}
		if n := extensions.Load() - before; n != tc.extended {
			t.Fatalf("%s: %d extensions, want %d", tc.name, n, tc.extended)
		}
		if left, want := lk.validUntil.Sub(now), ttl-drift(ttl); left < want {
			t.Fatalf("%s: proven validity %v, want at least TTL - drift (%v)", tc.name, left, want)
		}
	}
}

// pendingWakeups counts the messages waiting in the registrations on the
// resource's channel.
func pendingWakeups(l *Locker, resource string) int {
	l.waker.mu.Lock()
	defer l.waker.mu.Unlock()
	ls := l.waker.channels[channel(l.lockKey(resource))]
	if ls == nil {
		return 0
	}
	n := 0
	for c := range ls.waiters {
		n += len(c)
	}
	return n
}

// A waiter handed the lock while its own attempt fails cleans that attempt
// up, which passes the lock on; the hand-over's message, still buffered,
// must not then make Acquire return a lock that nobody holds.
func TestHandOverNeverReturnsALockNobodyHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.Redis(t)
	rdb := node.Client()
	holderLocker := handOverLocker(t, node, time.Second)
	held, err := holderLocker.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var w *Locker
	queuedAttempts := 0
	client := hooked(t, node, func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if !runs(cmd, w.scripts.queuedAcquire) {
			return next(ctx, cmd)
		}
		if queuedAttempts++; queuedAttempts != 2 {
			return next(ctx, cmd)
		}
		// The second attempt: the waiter is queued and listening. The
		// holder releases, the lock is handed to the waiter, and the
		// message reaches it; then this attempt fails without reaching the
		// server.
		ch := channel(w.lockKey("r"))
		waitFor(t, "the waiter's subscription", time.Minute, func() bool {
			return rdb.PubSubNumSub(ctx, ch).Val()[ch] == 1
		})
		if err := held.Release(); err != nil {
			t.Error(err)
		}
		waitFor(t, "the hand-over message to arrive", time.Minute, func() bool { return pendingWakeups(w, "r") == 1 })
		return errors.New("injected: this EVALSHA failed")
	})
	w, _ = newLocker(t, []redis.UniversalClient{client}, Options{Name: "ho", TTL: 10 * time.Second, Wait: time.Minute,
		RetryMin: 200 * time.Millisecond, RetryMax: 200 * time.Millisecond, HandOver: true})
	loadScripts(t, w, rdb)
	lk, err := w.Acquire(ctx, "r")
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer lk.Release()
	if queuedAttempts < 2 {
		t.Fatalf("%d queued attempts, the failure was never injected", queuedAttempts)
	}
	if got := rdb.Get(ctx, w.lockKey("r")).Val(); got != lk.holder {
		t.Fatalf("Acquire returned a lock the server does not hold for it (key = %q, holder %q)", got, lk.holder)
	}
	other, _ := newLocker(t, clients(t, node), Options{Name: "ho", TTL: 10 * time.Second, Wait: 50 * time.Millisecond})
	if _, err := other.Acquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("another client acquired while the waiter's lock was live: %v", err)
	}
}
