package cachex

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span names; they and their attributes are a contract like the metric
// names.
const (
	spanGet       = "cachex.get"
	spanGetMany   = "cachex.get_many"
	spanRecompute = "cachex.recompute"
	spanLoadSlot  = "cachex.load_slot" // waiting for one of MaxLoads loader slots
)

// instrumentation is the name cachex's tracer is obtained under (the
// instrumentation scope on every span). OpenTelemetry names it after the
// package's import path: when you copy cachex into your module, set it to
// your copy's path.
const instrumentation = "cachex"

// tracer starts a cache's spans. A nil *tracer (Options.TracerProvider
// unset) starts none, so an untraced cache pays a nil check per call.
type tracer struct {
	t     trace.Tracer
	cache attribute.KeyValue
}

func newTracer(tp trace.TracerProvider, cache string) *tracer {
	if tp == nil {
		return nil
	}
	return &tracer{t: tp.Tracer(instrumentation), cache: attribute.String("cachex.cache", cache)}
}

// start starts a span named name under ctx's and returns it when it
// records; the caller then sets its attributes. It returns nil when t is,
// when the sampler dropped the span (ctx then carries it, so that nothing
// below starts another), or when ctx holds a span that was not sampled:
// under a parent-based sampler (the usual one, and the API's) its children
// would not be recorded either, and most reads of a service that keeps a
// few traces are such children. Attributes are built only for spans that
// record.
func (t *tracer) start(ctx context.Context, name string) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		return ctx, nil
	}
	ctx, span := t.t.Start(ctx, name)
	if !span.IsRecording() {
		return ctx, nil
	}
	span.SetAttributes(t.cache)
	return ctx, span
}

// end ends span (if any), marking it failed when err is a failure: a
// not-found answer is not one.
func end(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// count counts a Get's result and, when its cachex.get span records, sets
// it as the span's outcome.
func (c *Cache[V]) count(ctx context.Context, result string) {
	c.m.gets[result].Inc()
	if c.tr != nil {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.SetAttributes(attribute.String("cachex.outcome", result))
		}
	}
}

// origin is the span context a flight's waiters link to: the leader's.
func (c *Cache[V]) origin(ctx context.Context) trace.SpanContext {
	if c.tr == nil {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(ctx)
}

// observe records v in o with ctx's trace id as its exemplar when ctx's
// span is sampled (whoever started it), so that a slow bucket leads to a
// trace that was kept.
func observe(ctx context.Context, o prometheus.Observer, v float64) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(v)
}

// timeLoad runs one loader call for keys keys under a cachex.recompute span
// (given its reason and attrs), recovering a panic, and observes its
// duration: the XFetch delta.
func timeLoad[V, T any](c *Cache[V], ctx context.Context, reason string, keys int, load func(context.Context) (T, error), attrs ...attribute.KeyValue) (T, time.Duration, error) {
	ctx, span := c.tr.start(ctx, spanRecompute)
	if span != nil {
		span.SetAttributes(attribute.String("cachex.reason", reason), attribute.Int("cachex.keys", keys))
		span.SetAttributes(attrs...)
	}
	start := time.Now()
	v, err := protect(c, func() (T, error) { return load(ctx) })
	delta := time.Since(start)
	observe(ctx, c.m.duration, delta.Seconds())
	if span != nil {
		span.SetAttributes(attribute.String("cachex.status", loadStatus(err)))
	}
	end(span, err)
	return v, delta, err
}
