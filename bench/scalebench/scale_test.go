package scalebench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// ttl is the locks' TTL, as bench/lockbench's; timeout the clients' read and
// write timeouts (lockx's default per-call Timeout, TTL/10): 1 s, so that a
// busy machine's scheduling delays under 32 goroutines do not time a call
// out (at 500 ms a release did, at a load average of 27 on 2 CPUs).
const (
	ttl     = 10 * time.Second
	timeout = ttl / 10
	// batch is how many keys a batch read asks for.
	batch = 100
)

// client returns a client of n with the bounds the api gives its lock
// clients.
func client(b *testing.B, n *testenv.RedisNode) *redis.Client {
	opt := n.Options()
	opt.ContextTimeoutEnabled = true
	opt.ReadTimeout, opt.WriteTimeout = timeout, timeout
	c := redis.NewClient(opt)
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// BenchmarkLockQuorum acquires and releases a lock (distinct keys, no
// contention) on 1 server, and on Redlock quorums of 3 and 5 independent
// servers (2 and 3 needed), one caller at a time (seq) and from many
// goroutines (parallel).
func BenchmarkLockQuorum(b *testing.B) {
	nodes := testenv.RedisNodes(b, 5)
	rdbs := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		rdbs[i] = client(b, n)
	}
	for _, mode := range []string{"seq", "parallel"} {
		for _, size := range []int{1, 3, 5} {
			l, err := lockx.New(rdbs[:size], lockx.Options{Name: "quorum" + strconv.Itoa(size), TTL: ttl, Registerer: prometheus.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = l.Close() })
			take := func(ctx context.Context, key string) error {
				lk, err := l.Acquire(ctx, key)
				if err != nil {
					return err
				}
				return lk.Release()
			}
			b.Run(fmt.Sprintf("%dnodes/%s", size, mode), func(b *testing.B) { countCommands(b, nodes[:size], func() { run(b, mode, take) }) })
		}
	}
}

// run times take over keys of its own per goroutine.
func run(b *testing.B, mode string, take func(context.Context, string) error) {
	b.ReportAllocs()
	ctx := context.Background()
	if mode == "seq" {
		for i := 0; b.Loop(); i++ {
			if err := take(ctx, "seq:"+strconv.Itoa(i%64)); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(16)
	var g atomic.Int64
	errs := make(chan error, 1)
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(g.Add(1), 10)
		for i := 0; pb.Next(); i++ {
			if err := take(ctx, "par:"+id+":"+strconv.Itoa(i%64)); err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
		}
	})
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// BenchmarkGetManyTopology reads 100 cached keys with cachex's GetMany (all
// hits) from one server and from a Redis Cluster of 3 masters, where the
// keys spread over the masters and the read costs a round trip per master.
func BenchmarkGetManyTopology(b *testing.B) {
	single := testenv.Redis(b)
	cluster := testenv.RedisCluster(b, 3)
	cl := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{cluster.Nodes[0].Addr()}, ContextTimeoutEnabled: true, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
	})
	b.Cleanup(func() { _ = cl.Close() })
	keys := make([]string, batch)
	for i := range keys {
		keys[i] = "product:" + strconv.Itoa(i)
	}
	load := func(_ context.Context, ks []string) (map[string][]byte, error) {
		out := make(map[string][]byte, len(ks))
		for _, k := range ks {
			out[k] = make([]byte, 512)
		}
		return out, nil
	}
	for _, side := range []struct {
		name  string
		rdb   redis.UniversalClient
		nodes []*testenv.RedisNode
	}{{"single", client(b, single), []*testenv.RedisNode{single}}, {"cluster3", cl, cluster.Nodes}} {
		c, err := cachex.New(side.rdb, cachex.Raw{}, cachex.Options{Name: side.name, TTL: time.Hour, Registerer: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		if _, err := c.GetMany(context.Background(), keys, load); err != nil {
			b.Fatal(err)
		}
		b.Run(side.name+"/seq", func(b *testing.B) {
			countCommands(b, side.nodes, func() {
				run(b, "seq", func(ctx context.Context, _ string) error {
					vals, err := c.GetMany(ctx, keys, load)
					if err == nil && len(vals) != batch {
						err = fmt.Errorf("%d values, want %d", len(vals), batch)
					}
					return err
				})
			})
		})
	}
}

// countCommands runs bench and reports the commands the servers nodes
// processed per operation (cmds/op, from INFO's total_commands_processed,
// less the INFO calls themselves): a figure the machine's load does not
// move, unlike the time.
func countCommands(b *testing.B, nodes []*testenv.RedisNode, bench func()) {
	before := commands(b, nodes)
	bench()
	after := commands(b, nodes)
	if b.N > 0 {
		b.ReportMetric(float64(after-before-int64(len(nodes)))/float64(b.N), "cmds/op")
	}
}

// commands sums the commands nodes have processed.
func commands(b *testing.B, nodes []*testenv.RedisNode) int64 {
	var total int64
	for _, n := range nodes {
		info, err := n.Client().Info(context.Background(), "stats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				total += c
			}
		}
	}
	return total
}
