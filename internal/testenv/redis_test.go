package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
)

func TestRedisAnswersAndIsPrivate(t *testing.T) {
	ctx := context.Background()
	a, b := testenv.Redis(t), testenv.Redis(t)
	if os.Getenv("REDIS_URL") == "" && a.Addr() == b.Addr() {
		t.Fatalf("two Redis(t) calls share %s", a.Addr())
	}
	if err := a.Client().Set(ctx, "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("REDIS_URL") != "" {
		return // a shared server: privacy cannot hold
	}
	if err := b.Client().Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("second server sees the first one's key: err=%v", err)
	}
}

func TestRedisNodePauseTimesOutUntilResume(t *testing.T) {
	ctx := context.Background()
	node := testenv.RedisNodes(t, 1)[0]
	c := node.Client() // the node's own timeouts, for the calls that must succeed
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	opt := node.Options()
	opt.ReadTimeout, opt.MaxRetries = 200*time.Millisecond, -1
	short := redis.NewClient(opt) // for the call that must time out
	defer short.Close()

	node.Pause()
	err := short.Get(ctx, "k").Err()
	var netErr interface{ Timeout() bool }
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("GET on a paused node: got %v, want a timeout", err)
	}

	node.Resume()
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v; want v", got, err)
	}
}

func TestRedisNodeRestartLosesData(t *testing.T) {
	ctx := context.Background()
	node := testenv.RedisNodes(t, 1)[0]
	c := node.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	addr := node.Addr()
	node.Restart()
	if node.Addr() != addr {
		t.Fatalf("restart moved the node from %s to %s", addr, node.Addr())
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Restart: err=%v, want redis.Nil (data lost)", err)
	}
}

func TestRedisNodeStopAndKillRefuseConnections(t *testing.T) {
	ctx := context.Background()
	nodes := testenv.RedisNodes(t, 3)
	seen := map[string]bool{}
	for _, n := range nodes {
		if seen[n.Addr()] {
			t.Fatalf("two nodes on %s", n.Addr())
		}
		seen[n.Addr()] = true
	}
	for i, end := range []func(*testenv.RedisNode){(*testenv.RedisNode).Stop, (*testenv.RedisNode).Kill} {
		n := nodes[i]
		c := n.Client()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		end(n)
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatalf("node %d still answers after it was ended", i)
		}
		n.Restart() // a stopped node starts again on its address
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("node %d after Restart: %v", i, err)
		}
	}
	if err := nodes[2].Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("untouched node: %v", err)
	}
}

func TestRedisClusterSpreadsKeysOverAllMasters(t *testing.T) {
	ctx := context.Background()
	cl := testenv.RedisCluster(t, 3)
	for i := range 300 {
		if err := cl.Client.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, n := range cl.Nodes {
		keys, err := n.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if keys < 50 { // each master serves a third of the slots
			t.Errorf("master %s holds %d of 300 keys", n.Addr(), keys)
		}
		total += int(keys)
	}
	if total != 300 {
		t.Fatalf("masters hold %d keys in all, want 300", total)
	}
	var masters atomic.Int32 // ForEachMaster calls back concurrently
	err := cl.Client.ForEachMaster(ctx, func(context.Context, *redis.Client) error { masters.Add(1); return nil })
	if err != nil || masters.Load() != 3 {
		t.Fatalf("client sees %d masters (err %v), want 3", masters.Load(), err)
	}
}
