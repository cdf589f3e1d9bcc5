package cachex

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// recorder returns a tracer provider that samples everything and keeps
// the ended spans in memory.
func recorder(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// spansNamed returns the ended spans called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of span s's attribute key ("" when absent).
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func TestSpansTellAMissAndAHit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, rec := recorder(t)
	c, _ := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{Name: "traced", TTL: time.Minute, TracerProvider: tp})
	var inLoad trace.SpanContext
	load := func(ctx context.Context) ([]byte, error) {
		inLoad = trace.SpanContextFromContext(ctx)
		return []byte("v"), nil
	}
	root, span := tp.Tracer("test").Start(ctx, "request")
	if _, err := c.Get(root, "k", load); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(root, "k", load); err != nil {
		t.Fatal(err)
	}
	span.End()

	gets := spansNamed(rec, spanGet)
	if len(gets) != 2 {
		t.Fatalf("%d cachex.get spans, want 2", len(gets))
	}
	miss, hit := gets[0], gets[1]
	if attr(miss, "cachex.outcome") != resultMiss || attr(hit, "cachex.outcome") != resultHit {
		t.Fatalf("outcomes %q, %q; want miss, hit", attr(miss, "cachex.outcome"), attr(hit, "cachex.outcome"))
	}
	for _, g := range gets {
		if g.Parent().SpanID() != span.SpanContext().SpanID() || attr(g, "cachex.cache") != "traced" || attr(g, "cachex.key") != "k" {
			t.Fatalf("cachex.get span: parent %v (want the request's), cache %q, key %q", g.Parent().SpanID(), attr(g, "cachex.cache"), attr(g, "cachex.key"))
		}
	}
	recs := spansNamed(rec, spanRecompute)
	if len(recs) != 1 {
		t.Fatalf("%d cachex.recompute spans, want 1 (the hit loads nothing)", len(recs))
	}
	r := recs[0]
	if r.Parent().SpanID() != miss.SpanContext().SpanID() {
		t.Fatal("the recompute span is not a child of the miss's cachex.get span")
	}
	if attr(r, "cachex.reason") != reasonMiss || attr(r, "cachex.status") != "ok" || attr(r, "cachex.keys") != "1" {
		t.Fatalf("recompute attributes reason %q status %q keys %q", attr(r, "cachex.reason"), attr(r, "cachex.status"), attr(r, "cachex.keys"))
	}
	if inLoad.SpanID() != r.SpanContext().SpanID() {
		t.Fatal("the loader's context does not carry the recompute span: its queries would not nest under it")
	}
}

func TestSpansOfAnEarlyRefreshAndAFailedLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, rec := recorder(t)
	clk := newClock()
	c, _ := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{
		Name: "early", TTL: time.Minute, now: clk.Now, noClockSync: true, Beta: 1e9, TracerProvider: tp,
		rand: func() float64 { return 0.999999 }, // with Beta 1e9: refresh early, for any delta above 0
	})
	// Envelopes keep the delta in milliseconds: a load of at least 1ms
	// makes it nonzero, so that XFetch can decide to refresh early.
	if _, err := c.Get(ctx, "k", func(context.Context) ([]byte, error) { time.Sleep(2 * time.Millisecond); return []byte("v1"), nil }); err != nil {
		t.Fatal(err)
	}
	clk.Add(30 * time.Second)
	if _, err := c.Get(ctx, "k", func(context.Context) ([]byte, error) { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range rec.Ended() {
				t.Logf("span %s %v %v", s.Name(), s.Attributes(), s.Status())
			}
		}
	})
	waitFor(t, "the early refresh's span", func() bool {
		for _, s := range spansNamed(rec, spanRecompute) {
			if attr(s, "cachex.reason") == reasonEarly {
				return true
			}
		}
		return false
	})
	var early sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, spanRecompute) {
		if attr(s, "cachex.reason") == reasonEarly {
			early = s
		}
	}
	if attr(early, "cachex.status") != "panic" || early.Status().Code != codes.Error {
		t.Fatalf("early refresh that panicked: status attribute %q, span status %v", attr(early, "cachex.status"), early.Status())
	}
	if lead := attr(early, "cachex.lead_ms"); lead != "30000" {
		t.Fatalf("cachex.lead_ms = %q, want 30000 (30s before expiry on the injected clock)", lead)
	}
	if got := attr(spansNamed(rec, spanGet)[1], "cachex.outcome"); got != resultEarlyRefresh {
		t.Fatalf("outcome %q, want early_refresh", got)
	}
}

func TestSpansLinkWaitersToTheLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, rec := recorder(t)
	c, _ := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{Name: "waiters", TTL: time.Minute, TracerProvider: tp})
	l := &loader{release: make(chan struct{})}
	load := func(ctx context.Context) ([]byte, error) { s, err := l.load(ctx); return []byte(s), err }
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			rctx, span := tp.Tracer("test").Start(ctx, "request")
			defer span.End()
			if _, err := c.Get(rctx, "k", load); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, "four waiters", func() bool {
		c.loads.mu.Lock()
		defer c.loads.mu.Unlock()
		f := c.loads.m["k"]
		return f != nil && f.waiters == 4
	})
	close(l.release)
	wg.Wait()
	recs := spansNamed(rec, spanRecompute)
	if len(recs) != 1 {
		t.Fatalf("%d recompute spans, want 1", len(recs))
	}
	leader := recs[0].Parent()
	linked := 0
	for _, g := range spansNamed(rec, spanGet) {
		if g.SpanContext().SpanID() == leader.SpanID() {
			continue
		}
		if len(g.Links()) != 1 || g.Links()[0].SpanContext.SpanID() != leader.SpanID() {
			t.Fatalf("a waiter's cachex.get span links %v, want the leader's span", g.Links())
		}
		linked++
	}
	if linked != 3 {
		t.Fatalf("%d waiters linked, want 3", linked)
	}
}

func TestSpansOfGetMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, rec := recorder(t)
	c, _ := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{Name: "many", TTL: time.Minute, TracerProvider: tp})
	failed := errors.New("no")
	_, err := c.GetMany(ctx, []string{"a", "b", "c"}, func(context.Context, []string) (map[string][]byte, error) { return nil, failed })
	if !errors.Is(err, failed) {
		t.Fatalf("GetMany = %v, want the loader's error", err)
	}
	many := spansNamed(rec, spanGetMany)
	recs := spansNamed(rec, spanRecompute)
	if len(many) != 1 || len(recs) != 1 {
		t.Fatalf("%d get_many and %d recompute spans, want 1 and 1", len(many), len(recs))
	}
	if attr(many[0], "cachex.keys") != "3" || attr(recs[0], "cachex.keys") != "3" || many[0].Status().Code != codes.Error || attr(recs[0], "cachex.status") != "error" {
		t.Fatalf("get_many keys %q status %v; recompute keys %q status %q", attr(many[0], "cachex.keys"), many[0].Status(), attr(recs[0], "cachex.keys"), attr(recs[0], "cachex.status"))
	}
	if recs[0].Parent().SpanID() != many[0].SpanContext().SpanID() {
		t.Fatal("the batch recompute is not a child of cachex.get_many")
	}
}

// TestRecomputeExemplarIsTheCallersTrace: a loader call under a sampled
// span puts that trace id on cachex_recompute_duration_seconds, even when
// the cache itself starts no spans.
func TestRecomputeExemplarIsTheCallersTrace(t *testing.T) {
	t.Parallel()
	tp, rec := recorder(t)
	c, reg := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{Name: "exemplar", TTL: time.Minute})
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := c.Get(ctx, "k", func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
		t.Fatal(err)
	}
	span.End()
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("%d spans ended, want only the test's: a cache without a TracerProvider starts none", n)
	}
	if got := exemplarTraceIDs(t, reg, "cachex_recompute_duration_seconds"); len(got) != 1 || got[0] != span.SpanContext().TraceID().String() {
		t.Fatalf("exemplar trace ids %v, want [%s]", got, span.SpanContext().TraceID())
	}
}

// exemplarTraceIDs returns the trace_id of every exemplar on the buckets of
// the histogram family name.
func exemplarTraceIDs(t testing.TB, reg prometheus.Gatherer, name string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, b := range m.GetHistogram().GetBucket() {
				for _, l := range b.GetExemplar().GetLabel() {
					if l.GetName() == "trace_id" {
						ids = append(ids, l.GetValue())
					}
				}
			}
		}
	}
	return ids
}

// TestDependsOnTheOtelAPIOnly: copying cachex into a service brings the
// OpenTelemetry API, never the SDK.
func TestDependsOnTheOtelAPIOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := []string{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes", "go.opentelemetry.io/otel/semconv"}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "go.opentelemetry.io/") && !slices.ContainsFunc(allowed, func(a string) bool { return strings.HasPrefix(dep, a) }) {
			t.Errorf("cachex depends on %s: only the OpenTelemetry API (trace, attribute, codes) is allowed", dep)
		}
	}
}

// TestNoSpansUnderAnUnsampledParent: a read under a span its caller chose
// not to sample starts none of cachex's, even under a sampler that would
// record them: a parent-based sampler would not, and skipping them is what
// keeps tracing cheap for the reads of the traces not kept.
func TestNoSpansUnderAnUnsampledParent(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	c, _ := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{Name: "unsampled", TTL: time.Minute, TracerProvider: tp})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}}) // flags 00: not sampled
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	if _, err := c.Get(ctx, "k", func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans under an unsampled parent, want none", n)
	}
	if _, err := c.Get(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("v"), nil }); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("%d spans for a read without a parent, want its cachex.get", n)
	}
}

// TestSpansShowTheWaitForALoadSlot: a read that waits for one of MaxLoads
// loader slots shows the wait as a cachex.load_slot span before its
// recompute; a read that finds a slot free has none.
func TestSpansShowTheWaitForALoadSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, rec := recorder(t)
	c, _ := newCache(t, client(t, redistest.Redis(t)), Raw{}, Options{Name: "slots", TTL: time.Minute, MaxLoads: 1, TracerProvider: tp})
	l := &loader{release: make(chan struct{})}
	load := func(ctx context.Context) ([]byte, error) { s, err := l.load(ctx); return []byte(s), err }
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = c.Get(ctx, "first", load) })
	waitFor(t, "the first load", func() bool { return l.inFlight.Load() == 1 })
	wg.Go(func() { _, _ = c.Get(ctx, "second", load) })
	// The wait for the slot has begun once its span has started.
	waitFor(t, "the second read to wait for the slot", func() bool {
		for _, s := range rec.Started() {
			if s.Name() == spanLoadSlot {
				return true
			}
		}
		return false
	})
	close(l.release)
	wg.Wait()
	slots := spansNamed(rec, spanLoadSlot)
	if len(slots) != 1 {
		t.Fatalf("%d cachex.load_slot spans, want 1 (the second read's)", len(slots))
	}
	var second sdktrace.ReadOnlySpan
	for _, g := range spansNamed(rec, spanGet) {
		if attr(g, "cachex.key") == "second" {
			second = g
		}
	}
	if second == nil || slots[0].Parent().SpanID() != second.SpanContext().SpanID() {
		t.Fatal("the cachex.load_slot span is not the waiting read's")
	}
}
