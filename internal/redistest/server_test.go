package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// TestPauseSilencesTheServerUntilResume: a paused server accepts the command
// and answers nothing (the client's read times out); after Resume it
// answers.
func TestPauseSilencesTheServerUntilResume(t *testing.T) {
	ctx := context.Background()
	srv := redistest.New(t)
	c := redistest.Client(t, srv) // the calls that must succeed
	short := redistest.Client(t, srv, func(o *redis.Options) { o.ReadTimeout, o.MaxRetries = 200*time.Millisecond, -1 })
	key := redistest.Key(t) + "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Must(t, srv.Pause())
	var netErr interface{ Timeout() bool }
	if err := short.Get(ctx, key).Err(); !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("GET on a paused server: %v, want a timeout", err)
	}
	redistest.Must(t, srv.Resume())
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v", got, err)
	}
}

// TestRestartsLoseWhatTheyShould: Restart comes back empty on the same
// address; RestartFromSnapshot comes back with what Snapshot saved and
// without what was written after it.
func TestRestartsLoseWhatTheyShould(t *testing.T) {
	ctx := context.Background()
	srv := redistest.New(t)
	c := redistest.Client(t, srv)
	key := redistest.Key(t)
	redistest.Must(t, c.Set(ctx, key+"saved", "1", 0).Err())
	redistest.Must(t, srv.Snapshot(ctx))
	redistest.Must(t, c.Set(ctx, key+"after", "2", 0).Err())
	addr := srv.Addr()
	redistest.Must(t, srv.RestartFromSnapshot(ctx))
	if srv.Addr() != addr {
		t.Fatalf("the server moved from %s to %s", addr, srv.Addr())
	}
	if got, err := c.Get(ctx, key+"saved").Result(); err != nil || got != "1" {
		t.Errorf("the snapshot's key after the restart: %q, %v", got, err)
	}
	if err := c.Get(ctx, key+"after").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("a key written after the snapshot survived: %v", err)
	}
	redistest.Must(t, srv.Restart(ctx))
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("after Restart: %d keys, %v; want an empty server", n, err)
	}
}

// TestKillRefusesConnections: a killed server answers nothing; Restart
// brings it back.
func TestKillRefusesConnections(t *testing.T) {
	ctx := context.Background()
	srv := redistest.New(t)
	c := redistest.Client(t, srv, func(o *redis.Options) { o.MaxRetries = -1 })
	redistest.Must(t, srv.Kill(ctx))
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a killed server answered")
	}
	redistest.Must(t, srv.Restart(ctx))
	redistest.Must(t, c.Ping(ctx).Err())
}

// TestRedisClusterSpreadsTheSlots: each of three masters holds a share of
// 300 keys.
func TestRedisClusterSpreadsTheSlots(t *testing.T) {
	ctx := context.Background()
	cl := redistest.RedisCluster(t, 3)
	for i := range 300 {
		redistest.Must(t, cl.Client.Set(ctx, fmt.Sprintf("%s%d", redistest.Key(t), i), i, 0).Err())
	}
	for _, s := range cl.Nodes {
		if n, err := s.Client().DBSize(ctx).Result(); err != nil || n < 50 {
			t.Errorf("master %s holds %d of 300 keys (%v)", s.Addr(), n, err)
		}
	}
}

// TestKeysAreUnique: two calls in one test give two prefixes, each naming
// the test.
func TestKeysAreUnique(t *testing.T) {
	a, b := redistest.Key(t), redistest.Key(t)
	if a == b || a[:len(t.Name())] != t.Name() {
		t.Fatalf("Key gave %q and %q", a, b)
	}
}

// TestUnansweringAddressTimesOut: a dial to it neither connects nor is
// refused; it ends at the dialer's own timeout.
func TestUnansweringAddressTimesOut(t *testing.T) {
	addr := redistest.Unanswering(t)
	_, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial %s: %v, want a timeout", addr, err)
	}
}
