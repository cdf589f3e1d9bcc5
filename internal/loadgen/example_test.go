package loadgen_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// A Runner drives 100 arrivals at 1,000 per second against a test server,
// whatever the server's latency, and reports each one.
func ExampleRunner() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	client, err := loadgen.NewClient(srv.URL, time.Second)
	if err != nil {
		panic(err)
	}
	h := loadgen.NewHistogram()
	r := &loadgen.Runner{
		Rate: 1000, MaxRequests: 100, MaxInFlight: 100,
		Do: func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			return client.Get(ctx, "root", "/", nil)
		},
		OnResult: func(res loadgen.Result) { // called concurrently; a Histogram is safe for that
			if !res.Dropped {
				h.Record(res.Latency)
			}
		},
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.Scheduled, sum.Completed+sum.Dropped, sum.Failed, h.Count() == sum.Completed)
	// Output: 100 100 0 true
}
