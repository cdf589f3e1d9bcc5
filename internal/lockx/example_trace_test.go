package lockx_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stampede-lab/stampede/internal/lockx"
)

// A Locker given a TracerProvider makes each acquisition a lockx.acquire
// span with its result, attempts and fencing token.
func ExampleOptions_tracerProvider() {
	rdb := exampleRedis()
	defer rdb.Close()
	spans := tracetest.NewSpanRecorder() // in a service: an OTLP exporter
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	locker, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "example_traced", TTL: 5 * time.Second, TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	lk, err := locker.Acquire(context.Background(), "sku-1")
	if err != nil {
		log.Fatal(err)
	}
	_ = lk.Release()
	s := spans.Ended()[0]
	for _, kv := range s.Attributes() {
		if kv.Key == "lockx.result" || kv.Key == "lockx.attempts" {
			fmt.Println(s.Name(), kv.Key, kv.Value.Emit())
		}
	}
	// Output:
	// lockx.acquire lockx.result acquired
	// lockx.acquire lockx.attempts 1
}
