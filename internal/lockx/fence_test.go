package lockx

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// takeTokens acquires and releases resource n times and returns the last
// token, failing unless every token is above the one before (and above
// after).
func takeTokens(t *testing.T, l *Locker, resource string, n int, after int64) int64 {
	t.Helper()
	last := after
	for i := range n {
		lk, err := l.Acquire(context.Background(), resource)
		if err != nil {
			t.Fatalf("acquisition %d: %v", i, err)
		}
		if lk.Token() <= last {
			t.Fatalf("acquisition %d: token %d is not above %d, issued before", i, lk.Token(), last)
		}
		last = lk.Token()
		if err := lk.Release(); err != nil {
			t.Fatalf("acquisition %d: release: %v", i, err)
		}
	}
	return last
}

// A restart that brings back an older counter (an RDB snapshot taken
// before the last acquisitions) must not re-issue tokens.
func TestTokensIncreaseAfterARestartFromASnapshot(t *testing.T) {
	t.Parallel()
	node := redistest.RedisNodes(t, 1)[0]
	l, _ := newLocker(t, clients(t, node), Options{Name: "fence", TTL: 10 * time.Second})
	last := takeTokens(t, l, "r", 3, 0)
	node.Snapshot()
	last = takeTokens(t, l, "r", 5, last) // lost with the crash below
	node.RestartFromSnapshot()
	takeTokens(t, l, "r", 5, last)
}

// A Redlock quorum whose majority comes back from old snapshots still
// issues larger tokens: the counters the raise wrote are gone, and only the
// servers' clocks remember.
func TestRedlockTokensIncreaseWithAMajorityRestoredFromSnapshots(t *testing.T) {
	t.Parallel()
	nodes := redistest.RedisNodes(t, 3)
	l, _ := newLocker(t, clients(t, nodes...), Options{Name: "fence", TTL: 10 * time.Second, Wait: 10 * time.Second})
	last := takeTokens(t, l, "r", 3, 0)
	for round := range 3 {
		for _, n := range nodes {
			n.Snapshot()
		}
		last = takeTokens(t, l, "r", 5, last)
		// A different majority each round; the third server keeps its data.
		nodes[round%3].RestartFromSnapshot()
		nodes[(round+1)%3].RestartFromSnapshot()
		last = takeTokens(t, l, "r", 5, last)
	}
}

// The fence counter expires (so idle resources do not fill Redis), and a
// missing counter restarts from the clock, above every token before it.
func TestFenceCounterExpiresAndRestartsAboveTheLastToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	rdb := node.Client()
	l, _ := newLocker(t, clients(t, node), Options{Name: "fence", TTL: 10 * time.Second})
	last := takeTokens(t, l, "r", 3, 0)
	key := fenceKey(l.lockKey("r"))
	pttl := rdb.PTTL(ctx, key).Val()
	if want := time.Duration(fenceExpiry(time.Second)) * time.Millisecond; pttl <= 0 || pttl > want {
		t.Fatalf("fence counter PTTL %v, want in (0, %v]", pttl, want)
	}
	// A counter expires a day after the last token, when the server's clock
	// is far past that token's millisecond; deleted at once, it would not be
	// (three tokens can be issued within one millisecond).
	waitFor(t, "the server's clock to pass the last token's millisecond", time.Minute, func() bool {
		now, err := rdb.Time(ctx).Result()
		return err == nil && now.UnixMilli()*1000 > last
	})
	if err := rdb.Del(ctx, key).Err(); err != nil { // as if it had expired
		t.Fatal(err)
	}
	takeTokens(t, l, "r", 3, last)
}

// Tokens issued faster than the clock ticks still increase: the counter
// runs ahead of the clock and the clock catches up.
func TestTokensIncreaseFasterThanTheClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := redistest.RedisNodes(t, 1)[0]
	rdb := node.Client()
	l, _ := newLocker(t, clients(t, node), Options{Name: "fence", TTL: 10 * time.Second})
	key := fenceKey(l.lockKey("r"))
	// A counter far ahead of the clock, as a raise from a server whose clock
	// is ahead leaves it.
	ahead := time.Now().Add(time.Hour).UnixMicro()
	if err := rdb.Set(ctx, key, ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if last := takeTokens(t, l, "r", 3, ahead); last != ahead+3 {
		t.Fatalf("last token %d, want the counter plus 3 (%d)", last, ahead+3)
	}
}
