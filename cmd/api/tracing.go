package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// serviceName is the service.name of the API's spans.
const serviceName = "stampede-api"

// checkOTLPEndpoint accepts "" (tracing off) or the http(s) base URL of an
// OTLP/HTTP receiver, to which /v1/traces is added.
func checkOTLPEndpoint(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("-otlp-endpoint %q: want the http(s) base URL of an OTLP/HTTP receiver, such as http://127.0.0.1:4318", s)
	}
	return nil
}

// tracerProvider returns the SDK provider that exports the API's spans to
// endpoint over OTLP/HTTP in batches, sampling a fraction sample of the
// traces that start here and following the caller's decision for those
// that continue a traceparent; nil when endpoint is "" (no tracing at all).
func tracerProvider(ctx context.Context, endpoint string, sample float64) (*sdktrace.TracerProvider, error) {
	if endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"),
		otlptracehttp.WithTimeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	host, _ := os.Hostname()
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(sample))),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(serviceName), semconv.ServiceInstanceID(host))),
	), nil
}

// traceRedis adds a span per command (and pipeline) to rdb; its
// AutoPipeliner's batches are pipelines of the client, so they are traced
// too. Statements are left out (they hold cached values), and so is the
// caller's source line, which costs a stack walk per command.
func traceRedis(rdb redis.UniversalClient, tp *sdktrace.TracerProvider) error {
	if tp == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false))
}

// tracePostgres adds a span per query, named by its SQL operation, to the
// pool's connections.
func tracePostgres(cfg *pgxpool.Config, tp *sdktrace.TracerProvider) {
	if tp == nil {
		return
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithMeterProvider(noop.NewMeterProvider()))
}
