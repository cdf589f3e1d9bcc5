package testenv

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// Cluster is a real Redis Cluster of private, cluster-enabled servers with the
// 16384 hash slots spread evenly over its masters and no replicas.
type Cluster struct {
	// Client is connected to every master, closed at the end of the test.
	Client *redis.ClusterClient
	// Nodes are the masters, in slot order: Nodes[0] serves slot 0.
	Nodes []*RedisNode
}

// RedisCluster starts a cluster of the given number of masters (at least 3,
// as Redis recommends, or fewer for a degenerate cluster), assigns slots, and
// returns once every node reports cluster_state:ok and all nodes agree on the
// slot map. It needs redis-server on PATH (or Docker).
func RedisCluster(tb TB, masters int) *Cluster {
	tb.Helper()
	skipShort(tb, "Redis Cluster")
	if masters < 1 {
		tb.Fatalf("testenv: RedisCluster needs at least one master, got %d", masters)
	}
	nodes := startNodes(tb, masters, true)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := redistest.FormCluster(ctx, addrs); err != nil {
		tb.Fatalf("testenv: form cluster: %v", err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        addrs,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
	})
	tb.Cleanup(func() { _ = c.Close() })
	ping(tb, c, "cluster "+strings.Join(addrs, ","))
	return &Cluster{Client: c, Nodes: nodes}
}
