package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterArgs are the redis-server arguments of a Redis Cluster node, for
// Start and New.
func ClusterArgs() []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "5000",
		"--cluster-require-full-coverage", "yes",
	}
}

// Cluster is a Redis Cluster of private servers with the slots spread
// evenly over its masters and no replicas.
type Cluster struct {
	// Client is connected to every master, closed when the test ends.
	Client *redis.ClusterClient
	// Nodes are the masters in slot order: Nodes[0] serves slot 0.
	Nodes []*Node
}

// RedisCluster starts a cluster of the given number of masters for the
// test, as New starts a server, and returns once it is formed (FormCluster).
func RedisCluster(tb TB, masters int) *Cluster {
	tb.Helper()
	nodes := make([]*Node, masters)
	addrs := make([]string, masters)
	for i := range nodes {
		nodes[i] = &Node{s: New(tb, ClusterArgs()...), tb: tb}
		addrs[i] = nodes[i].Addr()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := FormCluster(ctx, addrs); err != nil {
		tb.Fatalf("redistest: form cluster: %v", err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	tb.Cleanup(func() { _ = c.Close() })
	return &Cluster{Client: c, Nodes: nodes}
}

// FormCluster makes the cluster-enabled servers at addrs (started with
// ClusterArgs) one Redis Cluster without replicas: each gets a distinct
// config epoch and a contiguous range of the 16384 slots, in order, and
// meets the others. It returns once every node reports cluster_state:ok and
// all agree on the slot map.
func FormCluster(ctx context.Context, addrs []string) error {
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
		defer clients[i].Close()
	}
	const slots = 16384
	for i, c := range clients {
		if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("%s: set config epoch: %w", addrs[i], err)
		}
		lo, hi := i*slots/len(addrs), (i+1)*slots/len(addrs)-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("%s: add slots %d-%d: %w", addrs[i], lo, hi, err)
		}
	}
	for _, a := range addrs[1:] {
		host, port := splitAddr(a)
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("meet %s: %w", a, err)
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
