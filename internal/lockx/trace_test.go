package lockx

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// attr returns the value of span s's attribute key ("" when absent).
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func TestAcquireSpansTellResultAttemptsAndToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tp, rec := recorder(t)
	l, _ := newLocker(t, clients(t, redistest.Redis(t)), Options{Name: "traced", TTL: 5 * time.Second, Wait: time.Second, TracerProvider: tp})
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "r"); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("second Acquire = %v, want ErrNotAcquired", err)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != spanAcquire || spans[1].Name() != spanAcquire {
		t.Fatalf("%d spans, want two lockx.acquire", len(spans))
	}
	won, lost := spans[0], spans[1]
	if attr(won, "lockx.result") != "acquired" || attr(won, "lockx.attempts") != "1" || attr(won, "lockx.token") != strconv.FormatInt(lk.Token(), 10) ||
		attr(won, "lockx.name") != "traced" || attr(won, "lockx.resource") != "r" {
		t.Fatalf("won: result %q attempts %q token %q (want %d) name %q resource %q", attr(won, "lockx.result"), attr(won, "lockx.attempts"),
			attr(won, "lockx.token"), lk.Token(), attr(won, "lockx.name"), attr(won, "lockx.resource"))
	}
	attempts, _ := strconv.Atoi(attr(lost, "lockx.attempts"))
	wait, _ := strconv.ParseFloat(attr(lost, "lockx.wait_ms"), 64)
	if attr(lost, "lockx.result") != "timeout" || attempts < 2 || wait < 1000 || attr(lost, "lockx.token") != "" {
		t.Fatalf("timed out: result %q attempts %d wait_ms %v token %q; want timeout, >= 2, >= 1000, none",
			attr(lost, "lockx.result"), attempts, wait, attr(lost, "lockx.token"))
	}
}

// A lock lost while held leaves a lockx.lost event on the span it was
// acquired under: the holder's work.
func TestLostLockIsAnEventOnTheHoldersSpan(t *testing.T) {
	t.Parallel()
	tp, rec := recorder(t)
	l, _ := newLocker(t, clients(t, redistest.Redis(t)), Options{Name: "lose", TTL: quickTTL, Timeout: quickTimeout, NoWatchdog: true, TracerProvider: tp})
	ctx, work := tp.Tracer("test").Start(context.Background(), "work")
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	<-lk.Context().Done() // no watchdog: validity runs out
	work.End()
	var got []string
	for _, s := range rec.Ended() {
		if s.Name() != "work" {
			continue
		}
		for _, e := range s.Events() {
			got = append(got, e.Name)
		}
	}
	if !slices.Equal(got, []string{eventLost}) {
		t.Fatalf("events on the holder's span %v, want [%s]", got, eventLost)
	}
}

func TestAcquireWaitExemplarIsTheCallersTrace(t *testing.T) {
	t.Parallel()
	tp, _ := recorder(t)
	l, reg := newLocker(t, clients(t, redistest.Redis(t)), Options{Name: "exemplar", TTL: 5 * time.Second})
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	lk, err := l.Acquire(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	span.End()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, mf := range mfs {
		if mf.GetName() != "lockx_acquire_wait_seconds" {
			continue
		}
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			for _, lp := range b.GetExemplar().GetLabel() {
				ids = append(ids, lp.GetValue())
			}
		}
	}
	if want := span.SpanContext().TraceID().String(); !slices.Equal(ids, []string{want}) {
		t.Fatalf("exemplars %v, want [%s]", ids, want)
	}
}

// TestDependsOnTheOtelAPIOnly: copying lockx into a service brings the
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
			t.Errorf("lockx depends on %s: only the OpenTelemetry API (trace, attribute, codes) is allowed", dep)
		}
	}
}

// TestNoAcquireSpanUnderAnUnsampledParent: an acquisition under a span its
// caller chose not to sample starts no span, even under a sampler that
// would record it (a parent-based one would not).
func TestNoAcquireSpanUnderAnUnsampledParent(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	l, _ := newLocker(t, clients(t, redistest.Redis(t)), Options{Name: "unsampled", TTL: 5 * time.Second, TracerProvider: tp})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}}) // flags 00
	lk, err := l.Acquire(trace.ContextWithRemoteSpanContext(context.Background(), parent), "r")
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans under an unsampled parent, want none", n)
	}
}
