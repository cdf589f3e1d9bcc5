package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRequest compares one request through loadgen's whole path
// (Client with URL checks and outcome classification, then Stats, Metrics
// and a timeline recording the result) with a bare net/http GET that reads
// the body, against the same loopback server: the difference is what
// loadgen adds to every latency it reports, and bounds the rate one process
// can drive. Compare the ns/op of the sub-benchmarks as a ratio.
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"category_id":1,"products":500,"reviews":8000,"avg_rating":3.9}`)
	}))
	defer srv.Close()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	raw := &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)

	b.Run("raw-net-http", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := raw.Get(srv.URL + "/v1/categories/1/stats")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	})

	b.Run("loadgen", func(b *testing.B) {
		c, err := NewClient(srv.URL, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseIdleConnections()
		stats := NewStats(nil)
		metrics, err := NewMetrics(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		tl := NewTimeline(Targets{c}, nil, time.Second)
		ctx := context.Background()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				start := time.Now()
				out := c.Get(ctx, "category_stats", "/v1/categories/1/stats", nil)
				if out.Err != nil {
					b.Fatal(out.Err)
				}
				res := Result{Outcome: out, Latency: time.Since(start)}
				stats.ObserveResult("stampede", res)
				metrics.Observe("stampede", res)
				tl.Record(res)
			}
		})
	})
}
