package lockx

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The span and event names; they and their attributes are a contract like
// the metric names.
const (
	spanAcquire = "lockx.acquire"
	eventLost   = "lockx.lost"
)

// instrumentation is the name lockx's tracer is obtained under (the
// instrumentation scope on every span). OpenTelemetry names it after the
// package's import path: when you copy lockx into your module, set it to
// your copy's path.
const instrumentation = "lockx"

// tracer starts a Locker's spans. A nil *tracer (Options.TracerProvider
// unset) starts none, so an untraced Locker pays a nil check per call.
type tracer struct {
	t    trace.Tracer
	name attribute.KeyValue
}

func newTracer(tp trace.TracerProvider, name string) *tracer {
	if tp == nil {
		return nil
	}
	return &tracer{t: tp.Tracer(instrumentation), name: attribute.String("lockx.name", name)}
}

// startAcquire starts the span of one Acquire or TryAcquire call and
// returns it when it records: nil when the sampler dropped it or ctx holds
// a span that was not sampled (a parent-based sampler would not record it).
func (t *tracer) startAcquire(ctx context.Context, resource string, once bool) (context.Context, trace.Span) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		return ctx, nil
	}
	ctx, span := t.t.Start(ctx, spanAcquire)
	if !span.IsRecording() { // dropped by the sampler
		return ctx, nil
	}
	span.SetAttributes(t.name, attribute.String("lockx.resource", resource), attribute.Bool("lockx.try", once))
	return ctx, span
}

// endAcquire ends an acquire span with what the call came to. Not getting
// the lock within the wait budget is an outcome, not a failure.
func endAcquire(span trace.Span, lk *Lock, err error, attempts int, wait time.Duration) {
	result := "acquired"
	switch {
	case errors.Is(err, ErrNotAcquired):
		result = "timeout"
	case err != nil:
		result = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("lockx.result", result), attribute.Int("lockx.attempts", attempts),
		attribute.Float64("lockx.wait_ms", float64(wait)/float64(time.Millisecond)))
	if lk != nil {
		span.SetAttributes(attribute.Int64("lockx.token", lk.token))
	}
	span.End()
}

// lostEvent puts the loss of lk on the span the lock was acquired under
// (the holder's), when the Locker traces.
func (lk *Lock) lostEvent(cause error) {
	if lk.l.tr == nil {
		return
	}
	trace.SpanFromContext(lk.ctx).AddEvent(eventLost, trace.WithAttributes(lk.l.tr.name,
		attribute.Int64("lockx.token", lk.token), attribute.String("lockx.cause", cause.Error())))
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
