package cachex_test

import (
	"context"
	"fmt"
	"log"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stampede-lab/stampede/internal/cachex"
)

// A cache given a TracerProvider tells each read's outcome and each
// recompute's reason in spans; the loader's context carries the recompute
// span, so its queries nest under it.
func ExampleOptions_tracerProvider() {
	rdb := exampleRedis()
	defer rdb.Close()
	spans := tracetest.NewSpanRecorder() // in a service: an OTLP exporter
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	stats, err := cachex.New(rdb, cachex.JSON[CategoryStats]{}, cachex.Options{
		Name: "example_traced", TTL: 30 * time.Second, TracerProvider: tp,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer stats.Close()
	ctx := context.Background()
	_ = stats.Invalidate(ctx, "garden") // start from nothing
	load := func(ctx context.Context) (CategoryStats, error) { return CategoryStats{Products: 412}, nil }
	for range 2 {
		if _, err := stats.Get(ctx, "garden", load); err != nil {
			log.Fatal(err)
		}
	}
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "cachex.outcome" || kv.Key == "cachex.reason" {
				fmt.Println(s.Name(), kv.Key, kv.Value.Emit())
			}
		}
	}
	// Output:
	// cachex.recompute cachex.reason miss
	// cachex.get cachex.outcome miss
	// cachex.get cachex.outcome hit
}
