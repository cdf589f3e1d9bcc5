package lockx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stampede-lab/stampede/internal/testenv"
)

func TestRedlockAcquiresWithAMinorityKilled(t *testing.T) {
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 5)
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: time.Second, Wait: 500 * time.Millisecond})
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
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 5)
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: time.Second, Wait: 300 * time.Millisecond})
	for _, n := range nodes[:3] {
		n.Kill()
	}
	budget, cancel := context.WithTimeout(ctx, 5*time.Second) // far beyond Wait: only Wait can end it first
	defer cancel()
	if _, err := l.Acquire(budget, "r"); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("with 3 of 5 nodes down: %v, want ErrUnavailable (and not ErrNotAcquired)", err)
	}
	if budget.Err() != nil {
		t.Fatal("Acquire ran past its wait budget")
	}
	// The clean-up of a server that answered late runs in the background,
	// within Timeout of its reply: it may still be on its way.
	for _, n := range nodes[3:] {
		waitFor(t, "a failed Acquire's lock on "+n.Addr()+" to be cleaned up", 5*time.Second, func() bool {
			return n.Client().Exists(ctx, l.lockKey("r")).Val() == 0
		})
	}
}

func TestRedlockPausedMinorityDoesNotStallAcquire(t *testing.T) {
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 5)
	const timeout = 50 * time.Millisecond
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: time.Second, Timeout: timeout})
	nodes[1].Pause()
	nodes[4].Pause()
	defer nodes[1].Resume()
	defer nodes[4].Resume()
	// The nodes stay frozen for the rest of the test; only the per-node
	// timeout can end their calls. 20 timeouts of slack for a loaded machine.
	actx, cancel := context.WithTimeout(ctx, 20*timeout)
	defer cancel()
	lk, err := l.Acquire(actx, "r")
	if err != nil {
		t.Fatalf("with 2 of 5 nodes paused: %v", err)
	}
	_ = lk.Release()
}

func TestRedlockWatchdogLosesWhenTheQuorumIsGone(t *testing.T) {
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 5)
	// A TTL of 1.5s gives each call 150ms (Timeout, TTL/10): at 300ms the
	// 30ms calls failed on a loaded CI machine under -race, and no extension
	// ever succeeded.
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "rl", TTL: 1500 * time.Millisecond})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	// Acquire returns once 3 of 5 servers set the lock; the others' scripts
	// may still be on their way. Deleted before they run, the key would be
	// set again there, and a quorum would go on holding it.
	key := l.lockKey("r")
	waitFor(t, "the lock set on all five servers", 10*time.Second, func() bool {
		for _, n := range nodes {
			if n.Client().Exists(ctx, key).Val() != 1 {
				return false
			}
		}
		return true
	})
	del := func(n *testenv.RedisNode) {
		if err := n.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Two nodes lose the key: a quorum of 3 still extends.
	for _, n := range nodes[:2] {
		del(n)
	}
	waitFor(t, "an extension by the remaining quorum", 10*time.Second, func() bool { return testutil.ToFloat64(l.m.extOK) >= 2 })
	if lk.Context().Err() != nil {
		t.Fatalf("lost with a quorum still holding: %v", context.Cause(lk.Context()))
	}
	// A third node loses it: no quorum can extend any more.
	del(nodes[2])
	select {
	case <-lk.Context().Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the lock was not lost 20s after a third of five servers lost it")
	}
	if !errors.Is(context.Cause(lk.Context()), ErrLost) {
		t.Fatalf("cause %v, want ErrLost", context.Cause(lk.Context()))
	}
	_ = lk.Release()
}

func TestFencingTokenSurvivesARestartThatLosesData(t *testing.T) {
	ctx := context.Background()
	node := testenv.RedisNodes(t, 1)[0]
	l, _ := newLocker(t, clients(t, node), Options{Name: "fence", TTL: time.Second})
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
	waitFor(t, "the node to answer", 5*time.Second, func() bool { return node.Client().Ping(ctx).Err() == nil })
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
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 5)
	var lockers []*Locker
	for range 4 {
		l, _ := newLocker(t, clients(t, nodes...), Options{Name: "fence", TTL: time.Second, Wait: 2 * time.Second})
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
