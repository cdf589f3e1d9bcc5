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
// names (docs/metrics.md#spans).
const (
	spanGet       = "cachex.get"
	spanGetMany   = "cachex.get_many"
	spanRecompute = "cachex.recompute"
)

// instrumentation is the name cachex's tracer is obtained under.
const instrumentation = "github.com/stampede-lab/stampede/internal/cachex"

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

// start starts a span named name under ctx's; nil when t is, or when ctx
// holds a span that was not sampled: under a parent-based sampler (the
// usual one, and the API's) its children would not be recorded either, and
// most reads of a service sampling a few traces are such children.
func (t *tracer) start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		return ctx, nil
	}
	return t.t.Start(ctx, name, trace.WithAttributes(append(attrs, t.cache)...))
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

// count counts a Get's result and, when traced, sets it as the outcome of
// its cachex.get span.
func (c *Cache[V]) count(ctx context.Context, result string) {
	c.m.gets[result].Inc()
	if c.tr != nil {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("cachex.outcome", result))
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
	ctx, span := c.tr.start(ctx, spanRecompute, append(attrs, attribute.String("cachex.reason", reason), attribute.Int("cachex.keys", keys))...)
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
