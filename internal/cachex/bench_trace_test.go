package cachex

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// discard is a span exporter that drops what it is given: the benchmark
// measures recording and batching, not a backend.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkGetJSONTraced is BenchmarkGetJSON's cachex hit with tracing
// off (no TracerProvider: the "raw" baseline here), with a no-op provider
// (the OpenTelemetry API without an SDK), and with the SDK sampling 10% of
// traces into a batch processor. Each read is a trace of its own, so the
// cache's cachex.get span is the root the sampler decides on: what cachex
// itself costs, and more than under a request span, whose unsampled reads
// start no span (TestNoSpansUnderAnUnsampledParent). Goal: 10% sampling
// within 1.10x of off.
func BenchmarkGetJSONTraced(b *testing.B) {
	env := newBenchEnv(b, benchKeys)
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	for _, side := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"raw", nil}, {"noop", noop.NewTracerProvider()}, {"sampled10", sdk}} {
		c, _ := newCache(b, env.rdb, JSON[benchProduct]{}, Options{Name: "bench-" + side.name, TTL: benchTTL, TracerProvider: side.tp})
		var calls atomic.Int64
		load := prefill(b, c, env.keys, func(i int) benchProduct { return newBenchProduct(int64(i)) }, &calls)
		body := func(ctx context.Context, i int) error {
			p, err := c.Get(ctx, env.keys[i], load)
			if err == nil && p.ID != int64(i) {
				err = fmt.Errorf("cachex %s: got product %d", env.keys[i], p.ID)
			}
			return err
		}
		for _, mode := range []string{"seq", "parallel"} {
			b.Run(side.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "seq" {
					runSeq(b, benchKeys, body)
				} else {
					runParallel(b, benchKeys, body)
				}
			})
		}
		assertNoLoads(b, &calls, 0)
	}
}
