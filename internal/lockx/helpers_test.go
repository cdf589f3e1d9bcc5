package lockx

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// clients returns a client per node that honours context deadlines.
func clients(t testing.TB, nodes ...*testenv.RedisNode) []redis.UniversalClient {
	t.Helper()
	out := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		opt := n.Options()
		opt.ContextTimeoutEnabled = true
		opt.MaxRetries = -1   // a dead node answers at once, not after retries...
		opt.DialerRetries = 1 // ...nor after dialling again and again
		c := redis.NewClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		out[i] = c
	}
	return out
}

// newLocker returns a Locker on its own registry, closed at the end.
func newLocker(t testing.TB, nodes []redis.UniversalClient, opts Options) (*Locker, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if opts.Registerer == nil {
		opts.Registerer = reg
	}
	if opts.Name == "" {
		opts.Name = "test"
	}
	l, err := New(nodes, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, reg
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
