package testenv

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of private, cluster-enabled servers with the
// 16384 hash slots spread evenly over its masters and no replicas.
type Cluster struct {
	// Client is connected to every master, closed at the end of the test.
	Client *redis.ClusterClient
	// Nodes are the masters, in slot order: Nodes[0] serves slot 0.
	Nodes []*RedisNode
}

// clusterArgs are the redis-server arguments of a cluster node.
func clusterArgs() []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "5000",
		"--cluster-require-full-coverage", "yes",
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := formCluster(ctx, nodes); err != nil {
		tb.Fatalf("testenv: form cluster: %v", err)
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
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

// formCluster gives each node a distinct config epoch and a contiguous slot
// range, introduces them to each other, and waits for agreement.
func formCluster(ctx context.Context, nodes []*RedisNode) error {
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
	}
	const slots = 16384
	for i, c := range clients {
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("%s: set config epoch: %w", nodes[i].Addr(), err)
		}
		lo, hi := i*slots/len(nodes), (i+1)*slots/len(nodes)-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("%s: add slots %d-%d: %w", nodes[i].Addr(), lo, hi, err)
		}
	}
	for _, n := range nodes[1:] {
		host, port := splitAddr(n.Addr())
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("meet %s: %w", n.Addr(), err)
		}
	}
	for {
		agreed, why := clusterAgrees(ctx, clients)
		if agreed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes did not agree: %s", why)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterAgrees reports whether every node is in state ok, knows every other
// node, and sees the same slot map.
func clusterAgrees(ctx context.Context, clients []*redis.Client) (bool, string) {
	var first string
	for _, c := range clients {
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			return false, err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") ||
			!strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(clients))+"\r") {
			return false, c.Options().Addr + " not ok yet"
		}
		slots, err := c.ClusterSlots(ctx).Result()
		if err != nil {
			return false, err.Error()
		}
		m := slotMap(slots)
		if first == "" {
			first = m
		} else if m != first {
			return false, fmt.Sprintf("%s sees %s, first node sees %s", c.Options().Addr, m, first)
		}
	}
	return true, ""
}

// slotMap renders slot ranges and their master address in slot order.
func slotMap(slots []redis.ClusterSlot) string {
	parts := make([]string, 0, len(slots))
	for _, s := range slots {
		addr := ""
		if len(s.Nodes) > 0 {
			addr = s.Nodes[0].Addr
		}
		parts = append(parts, fmt.Sprintf("%05d-%05d@%s", s.Start, s.End, addr))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func splitAddr(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}
