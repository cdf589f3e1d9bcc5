package lockx

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestRedlockAcquiresWithAMinorityKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 5)
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: 10 * time.Second, Wait: 10 * time.Second})
	nodes[0].Kill()
	nodes[3].Kill()
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatalf("with 2 of 5 nodes down: %v", err)
	}
	held := 0
	for _, n := range nodes {
		if n == nodes[0] || n == nodes[3] {
			continue
		}
		if n.Client().Exists(ctx, l.lockKey("r")).Val() == 1 {
			held++
		}
	}
	if held != 3 {
		t.Fatalf("lock held on %d live nodes, want 3", held)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockFailsWithAMajorityKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 5)
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: 10 * time.Second, Wait: 300 * time.Millisecond})
	for _, n := range nodes[:3] {
		n.Kill()
	}
	// A caller's context far beyond Wait: ErrUnavailable, not its error,
	// says that Wait ended the Acquire.
	budget, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := l.Acquire(budget, "r"); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("with 3 of 5 nodes down: %v, want ErrUnavailable (and not ErrNotAcquired)", err)
	}
	// The clean-up of a server that answered late runs in the background,
	// within Timeout of its reply: it may still be on its way.
	for _, n := range nodes[3:] {
		waitFor(t, "a failed Acquire's lock on "+n.Addr()+" to be cleaned up", time.Minute, func() bool {
			return n.Client().Exists(ctx, l.lockKey("r")).Val() == 0
		})
	}
}

// With two of five servers paused, Acquire and Release are done before any
// call to the paused servers has run out of time.
func TestRedlockPausedMinorityDoesNotStallAcquire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 5)
	var silent silentLog
	cs := clients(t, nodes...)
	for _, i := range []int{1, 4} {
		cs[i] = logged(t, nodes[i], silentTimeout, &silent)
	}
	l, _ := newLocker(t, cs, silentOptions("rl"))
	nodes[1].Pause()
	nodes[4].Pause()
	defer nodes[1].Resume()
	defer nodes[4].Resume()
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatalf("with 2 of 5 nodes paused: %v", err)
	}
	if err := lk.Release(); err != nil {
		t.Fatalf("release with 2 of 5 nodes paused: %v", err)
	}
	if n := silent.ended.Load(); n != 0 {
		t.Fatalf("%d calls to the paused servers had run out of time when Release returned: one was waited for", n)
	}
}

// An acquire script that reaches a slow server after the lock was won on the
// others is part of the lock: Release deletes the lock there once that
// script has answered, not before, which would leave the lock set there
// until its TTL.
func TestReleaseWaitsForALateAcquire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 3)
	var (
		l     *Locker
		gate  = make(chan struct{})
		mu    sync.Mutex
		order []string // the scripts that ran on the slow server
	)
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	slow := hooked(t, nodes[2], func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		switch {
		case runs(cmd, l.scripts.acquire):
			select { // held back until Release has returned
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
			note("acquire")
		case runs(cmd, l.scripts.release):
			note("release")
		}
		return next(ctx, cmd)
	})
	l, _ = newLocker(t, append(clients(t, nodes[:2]...), slow), Options{Name: "late", TTL: time.Minute, Timeout: 10 * time.Second})
	loadScripts(t, l, nodes[2].Client())
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	close(gate)
	waitFor(t, "an acquire and a release on the slow server", time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 2
	})
	mu.Lock()
	ran := slices.Clone(order)
	mu.Unlock()
	if !slices.Equal(ran, []string{"acquire", "release"}) {
		t.Fatalf("scripts on the slow server in the order %v, want the release after the acquire", ran)
	}
	waitFor(t, "the lock to be gone from the slow server", time.Minute, func() bool {
		return nodes[2].Client().Exists(ctx, l.lockKey("r")).Val() == 0
	})
}

func TestRedlockWatchdogLosesWhenTheQuorumIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 5)
	// Each call gets 300ms: with 30ms calls (a TTL of 300ms) no extension
	// ever succeeded on a loaded CI machine under -race.
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: quickTTL, Timeout: quickTimeout})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	// Acquire returns once 3 of 5 servers set the lock; the others' scripts
	// may still be on their way. Deleted before they run, the key would be
	// set again there, and a quorum would go on holding it.
	key := l.lockKey("r")
	waitFor(t, "the lock set on all five servers", time.Minute, func() bool {
		for _, n := range nodes {
			if n.Client().Exists(ctx, key).Val() != 1 {
				return false
			}
		}
		return true
	})
	del := func(n *redistest.Node) {
		if err := n.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Two nodes lose the key: a quorum of 3 still extends.
	for _, n := range nodes[:2] {
		del(n)
	}
	waitFor(t, "an extension by the remaining quorum", time.Minute, func() bool { return testutil.ToFloat64(l.m.extOK) >= 2 })
	if lk.Context().Err() != nil {
		t.Fatalf("lost with a quorum still holding: %v", context.Cause(lk.Context()))
	}
	// A third node loses it: no quorum can extend any more.
	del(nodes[2])
	select {
	case <-lk.Context().Done():
	case <-time.After(time.Minute):
		t.Fatal("the lock was not lost a minute after a third of five servers lost it")
	}
	if !errors.Is(context.Cause(lk.Context()), ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(lk.Context()))
	}
	_ = lk.Release()
}

func TestFencingTokenSurvivesARestartThatLosesData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	l, _ := newLocker(t, clients(t, node), Options{Name: "fence", TTL: 10 * time.Second})
	var last int64
	for range 3 {
		lk, err := l.Acquire(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		last = lk.Token()
		_ = lk.Release()
	}
	node.Restart() // the counter is gone with the data
	waitFor(t, "the node to answer", time.Minute, func() bool { return node.Client().Ping(ctx).Err() == nil })
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if lk.Token() <= last {
		t.Fatalf("token after the restart %d is not above %d", lk.Token(), last)
	}
	_ = lk.Release()
}

// TestRedlockTokensIncreaseAcrossHandoffsWhileNodesRestart: 200 handoffs
// among several clients on 5 nodes; between handoffs nodes are killed and
// restarted empty. Tokens must strictly increase in handoff order.
func TestRedlockTokensIncreaseAcrossHandoffsWhileNodesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := redistest.RedisNodes(t, 5)
	var lockers []*Locker
	for range 4 {
		l, _ := newLocker(t, clients(t, nodes...), Options{Name: "fence", TTL: 10 * time.Second, Wait: 10 * time.Second})
		lockers = append(lockers, l)
	}
	var last int64
	for i := range 200 {
		// Node d crashes, comes back empty (its counter restarts from the
		// server clock, above every token so far), issues the next token,
		// and crashes again: from then on the others must issue larger
		// tokens, which holds only because the quorum raised their counters.
		d := nodes[(i/10)%5]
		switch i % 10 {
		case 3, 8:
			d.Kill()
		case 6, 9:
			d.Restart()
		}
		lk, err := lockers[i%len(lockers)].Acquire(ctx, "sku-1")
		if err != nil {
			t.Fatalf("handoff %d: %v", i, err)
		}
		if lk.Token() <= last {
			t.Fatalf("handoff %d: token %d not above the previous %d", i, lk.Token(), last)
		}
		last = lk.Token()
		if err := lk.Release(); err != nil {
			t.Fatalf("handoff %d: release: %v", i, err)
		}
	}
}
