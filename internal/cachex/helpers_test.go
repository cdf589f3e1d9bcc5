package cachex

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// client returns a client of node that honours context deadlines, as New
// requires.
func client(t testing.TB, node *redistest.Node) *redis.Client {
	t.Helper()
	opt := node.Options()
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newCache builds a cache on its own registry, closed at the end of the test.
// Under TestOverAutoPipeliner it builds it over rdb's AutoPipeliner instead,
// under TestWithAutoPipelineOption with Options.AutoPipeline.
func newCache[V any](t testing.TB, rdb redis.UniversalClient, codec Codec[V], opts Options) (*Cache[V], *prometheus.Registry) {
	t.Helper()
	rdb, opts = overKind(t, rdb, opts)
	reg := prometheus.NewRegistry()
	if opts.Registerer == nil {
		opts.Registerer = reg
	}
	if opts.Name == "" {
		opts.Name = "test"
	}
	if opts.Timeout == 0 {
		// A busy machine running tests under -race can take longer than the
		// 100ms default for a Redis call, and a call cut short would be
		// counted as a Redis failure: the tests that want calls to time out
		// set their own.
		opts.Timeout = 5 * time.Second
	}
	c, err := New(rdb, codec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, reg
}

// gets reads cachex_gets_total for one result.
func gets[V any](c *Cache[V], result string) int {
	return int(testutil.ToFloat64(c.m.gets[result]))
}

// recomputes reads cachex_recomputes_total for one reason and status.
func recomputes[V any](c *Cache[V], reason, status string) int {
	return int(testutil.ToFloat64(c.m.recomputes[[2]string{reason, status}]))
}

// discards reads cachex_recomputes_discarded_total.
func discards[V any](c *Cache[V]) int {
	return int(testutil.ToFloat64(c.m.discarded))
}

// loader counts calls and in-flight calls of a loader that returns the call
// number as a string after an optional delay.
type loader struct {
	delay    time.Duration
	err      error
	calls    atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
	mu       sync.Mutex
	release  chan struct{} // when set, calls block until it is closed
}

func (l *loader) load(ctx context.Context) (string, error) {
	n := l.calls.Add(1)
	in := l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	for {
		m := l.maxIn.Load()
		if in <= m || l.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	if l.release != nil {
		select {
		case <-l.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if l.delay > 0 {
		time.Sleep(l.delay)
	}
	if l.err != nil {
		return "", l.err
	}
	return "v" + itoa(n), nil
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// eventWait is how long waitFor waits for an event before failing the
// test. It bounds a wait for something that must happen, not how fast it
// happens: a busy machine running the tests under -race can take seconds
// for what takes milliseconds on a quiet one.
const eventWait = time.Minute

// waitFor polls cond until it holds, failing the test if it has not after
// eventWait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", eventWait, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clock is a settable virtual clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// commands is a go-redis hook that counts commands by name and round trips
// (a pipeline is one round trip per node it reaches).
type commands struct {
	mu     sync.Mutex
	byName map[string]int
	mget   []int // keys per MGET
	trips  int
}

func (h *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd)
		return next(ctx, cmd)
	}
}

func (h *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		if h.byName == nil {
			h.byName = map[string]int{}
		}
		for _, c := range cmds {
			h.byName[c.Name()]++
			if c.Name() == "mget" {
				h.mget = append(h.mget, len(c.Args())-1)
			}
		}
		h.trips++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (h *commands) record(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byName == nil {
		h.byName = map[string]int{}
	}
	h.byName[cmd.Name()]++
	if cmd.Name() == "mget" {
		h.mget = append(h.mget, len(cmd.Args())-1)
	}
	h.trips++
}

// mgetKeys returns how many keys each MGET asked for.
func (h *commands) mgetKeys() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.mget...)
}

func (h *commands) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byName[name]
}

func (h *commands) roundTrips() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trips
}

func (h *commands) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byName, h.mget, h.trips = nil, nil, 0
}

// histogram returns the sample count and sum of a histogram family (summed
// over its series) gathered from reg.
func histogram(t testing.TB, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			count += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return count, sum
}

func counterOf(c prometheus.Counter) float64 { return testutil.ToFloat64(c) }

// mustSetStrategy sets c's strategy for the reads that follow.
func mustSetStrategy[V any](t testing.TB, c *Cache[V], s Strategy) {
	t.Helper()
	if err := c.SetStrategy(s); err != nil {
		t.Fatal(err)
	}
}

// mustSetBeta sets c's beta for the reads that follow.
func mustSetBeta[V any](t testing.TB, c *Cache[V], beta float64) {
	t.Helper()
	if err := c.SetBeta(beta); err != nil {
		t.Fatal(err)
	}
}
