package catalog

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stampede-lab/stampede/internal/cachex"
)

// benchScale is the seed of the benchmarks: 5,000 products and 80,000
// reviews in 40 categories, so that the statistics aggregate costs what it
// would in a small real catalog.
const benchScale = 0.2

// benchRoutes runs GET requests on path(i) through the handler from
// parallel goroutines, with the named cache under strategy none ("db") and
// xfetch ("cached"). It reports requests/s and the loader calls (database
// queries) per request.
func benchRoutes(b *testing.B, cache string, keys int, path func(i int) string) {
	a := newTestAPI(b, apiOptions{scale: benchScale})
	c := a.svc.Caches()[cache]
	for _, bc := range []struct {
		name     string
		strategy cachex.Strategy
	}{{"db", cachex.None}, {"cached", cachex.XFetch}} {
		b.Run(bc.name, func(b *testing.B) {
			if err := c.SetStrategy(bc.strategy); err != nil {
				b.Fatal(err)
			}
			for i := range keys { // warm the cache (and the database's buffers)
				if rec := a.do(http.MethodGet, path(i), ""); rec.Code != http.StatusOK {
					b.Fatalf("GET %s = %d %s", path(i), rec.Code, rec.Body.String())
				}
			}
			loads := func() float64 {
				return metricValue(b, a.reg, "cachex_recomputes_total", map[string]string{"cache": cache})
			}
			before := loads()
			var next atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p := path(int(next.Add(1)) % keys)
					req := httptest.NewRequest(http.MethodGet, p, nil)
					rec := httptest.NewRecorder()
					a.handler.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Errorf("GET %s = %d %s", p, rec.Code, rec.Body.String())
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			b.ReportMetric((loads()-before)/float64(b.N), "dbcalls/op")
		})
	}
}

// BenchmarkCategoryStats reads the statistics of the 40 categories in turn:
// the expensive aggregate, straight from Postgres (db) and through the
// XFetch cache (cached).
func BenchmarkCategoryStats(b *testing.B) {
	benchRoutes(b, "category_stats", 40, func(i int) string {
		return "/v1/categories/" + strconv.Itoa(i+1) + "/stats"
	})
}

// BenchmarkProduct reads 1,000 products in turn: a primary-key lookup
// (db) against one Redis GET (cached).
func BenchmarkProduct(b *testing.B) {
	benchRoutes(b, "product", 1000, func(i int) string {
		return "/v1/products/" + strconv.Itoa(i+1)
	})
}
