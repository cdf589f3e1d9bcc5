package catalog

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The catalog's own span; it and its attributes are a contract like the
// metric names (docs/metrics.md#spans).
const spanReserve = "catalog.reserve"

// untraced reports the paths that get no server span: probes and scrapes,
// which would fill the trace backend with nothing to read.
func untraced(path string) bool {
	switch path {
	case "/metrics", "/healthz", "/readyz", "/health":
		return true
	}
	return false
}

// traced wraps h in the OpenTelemetry HTTP server instrumentation: a span
// per request, continuing a W3C traceparent the caller sent, named by
// nameSpan once the route is known. Without a provider, h is returned as is.
func traced(h http.Handler, tp trace.TracerProvider) http.Handler {
	if tp == nil {
		return h
	}
	return otelhttp.NewHandler(h, "http.server",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(noop.NewMeterProvider()), // the API's metrics are its own (http_*)
		otelhttp.WithFilter(func(r *http.Request) bool { return !untraced(r.URL.Path) }),
	)
}

// nameSpan names the request's server span "METHOD route", with chi's
// pattern as its http.route; made-up methods read "other", unknown paths
// "unmatched", as on the metrics.
func nameSpan(r *http.Request, route string) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetName(methodLabel(r.Method) + " " + route)
	span.SetAttributes(semconv.HTTPRoute(route))
}

// observe records v in o with ctx's trace id as its exemplar when ctx's
// span is sampled, so that a latency bucket leads to a trace that was kept.
func observe(ctx context.Context, o prometheus.Observer, v float64) {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(v)
}

// startReserve starts a reservation's span, or returns ctx and nil when
// the service does not trace.
func (s *Service) startReserve(ctx context.Context, req ReserveRequest) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	return s.tracer.Start(ctx, spanReserve, trace.WithAttributes(
		attribute.Int64("catalog.product_id", req.ProductID), attribute.Int("catalog.quantity", req.Quantity)))
}

// endReserve ends a reservation's span with its result ("" for failures
// outside the contract's results, which mark the span failed).
func endReserve(span trace.Span, result string, err error) {
	if span == nil {
		return
	}
	if result == "" {
		result = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("catalog.reserve.result", result))
	span.End()
}
