package lockx

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// clients returns a client per node that honours context deadlines.
func clients(t testing.TB, nodes ...*redistest.Node) []redis.UniversalClient {
	t.Helper()
	out := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		out[i] = client(t, n, 0)
	}
	return out
}

// client returns a client of node that honours context deadlines; a
// timeout above 0 is its read and write timeout as well, as lockx's clients
// should have: a call to a paused server then ends
// at lockx's Timeout over an AutoPipeliner too, whose batches run on a
// context of their own.
func client(t testing.TB, node *redistest.Node, timeout time.Duration) *redis.Client {
	t.Helper()
	opt := node.Options()
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1   // a dead node answers at once, not after retries...
	opt.DialerRetries = 1 // ...nor after dialling again and again
	if timeout > 0 {
		opt.ReadTimeout, opt.WriteTimeout = timeout, timeout
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// silentLog counts the script calls to a server that have returned. For a
// paused server that is the calls that ran out of time: none can return
// sooner than Timeout after it was made, so while ended is 0, nobody has
// waited a Timeout for that server.
type silentLog struct{ ended atomic.Int64 }

// logged returns a client of node (read and write timeouts of timeout, as
// client) whose script calls are counted in log when they return.
func logged(t testing.TB, node *redistest.Node, timeout time.Duration, log *silentLog) *redis.Client {
	t.Helper()
	c := client(t, node, timeout)
	c.AddHook(scriptHook(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		defer log.ended.Add(1)
		return next(ctx, cmd)
	}))
	return c
}

// newLocker returns a Locker on its own registry, closed at the end. Under
// TestOverAutoPipeliner it is built over the nodes' AutoPipeliners instead.
func newLocker(t testing.TB, nodes []redis.UniversalClient, opts Options) (*Locker, *prometheus.Registry) {
	t.Helper()
	nodes = overKind(t, nodes)
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

// scriptHook lets a test step into one client's script calls (EVALSHA and
// EVAL): f runs instead of the call and decides whether, when and how often
// next sends it. Other commands pass through.
type scriptHook func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error

func (h scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook gives the hook the script calls of a pipeline (an
// AutoPipeliner's batches are pipelines), each sent on its own.
func (h scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var rest []redis.Cmder
		var first error
		for _, cmd := range cmds {
			if n := cmd.Name(); n != "evalsha" && n != "eval" {
				rest = append(rest, cmd)
				continue
			}
			err := h(ctx, cmd, func(ctx context.Context, cmd redis.Cmder) error { return next(ctx, []redis.Cmder{cmd}) })
			if err != nil && cmd.Err() == nil {
				cmd.SetErr(err)
			}
			if first == nil {
				first = err
			}
		}
		if len(rest) > 0 {
			if err := next(ctx, rest); first == nil {
				first = err
			}
		}
		return first
	}
}
func (h scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			return h(ctx, cmd, next)
		}
		return next(ctx, cmd)
	}
}

// runs reports whether cmd runs script s (by SHA or by source).
func runs(cmd redis.Cmder, s *redis.Script) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	a, _ := args[1].(string)
	return a == s.Hash() || (cmd.Name() == "eval" && redis.NewScript(a).Hash() == s.Hash())
}

// hooked returns a client of node whose script calls go through h.
func hooked(t testing.TB, node *redistest.Node, h scriptHook) *redis.Client {
	t.Helper()
	c := client(t, node, 0)
	c.AddHook(h)
	return c
}

// loadScripts loads the Locker's scripts on rdb, so that a hook sees each
// call once, as EVALSHA, and not a NOSCRIPT failure and an EVAL.
func loadScripts(t testing.TB, l *Locker, rdb redis.UniversalClient) {
	t.Helper()
	s := l.scripts
	for _, sc := range []*redis.Script{s.acquire, s.raise, s.extend, s.release, s.queuedAcquire, s.grant} {
		if err := sc.Load(context.Background(), rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
