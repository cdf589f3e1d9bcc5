package catalog

import (
	"net/http"
	"strings"
	"testing"
)

// TestMetricsContract checks the http_* route labels are chi patterns, never
// raw paths, and that the metric families the dashboards depend on are
// exported, on the registry and at /metrics.
func TestMetricsContract(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, apiOptions{})
	a.setInventory(71, 10, 0)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/products/123", ""},
		{"GET", "/v1/products/124", ""},
		{"GET", "/v1/products/999999", ""},
		{"GET", "/v1/products/abc", ""},
		{"GET", "/v1/products?ids=5,6", ""},
		{"GET", "/v1/products/77/inventory", ""},
		{"GET", "/v1/categories/6/stats", ""},
		{"GET", "/v1/categories/6/top?limit=2", ""},
		{"GET", "/v1/search?q=steel", ""},
		{"PATCH", "/v1/products/78", `{"name": "Metric Mug"}`},
		{"POST", "/v1/reservations", reserveBody(71, 1, "metrics-1")},
		{"POST", "/v1/reservations/1/cancel", ""},
		{"GET", "/nope/4242", ""},
		{"DELETE", "/v1/products/4343", ""},
	} {
		if rec := a.do(r.method, r.path, r.body); rec.Code >= 500 {
			t.Fatalf("%s %s = %d", r.method, r.path, rec.Code)
		}
	}

	h := routerOperations(t, a.handler)
	patterns := map[string]bool{}
	for op := range h {
		patterns[op[strings.Index(op, " ")+1:]] = true
	}
	fams, err := a.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	routes := map[string]bool{}
	for _, f := range fams {
		got[f.GetName()] = true
		if !strings.HasPrefix(f.GetName(), "http_request") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "route" {
					continue
				}
				routes[l.GetValue()] = true
				for _, raw := range []string{"123", "124", "999999", "abc", "77", "78", "4242", "4343"} {
					if strings.Contains(l.GetValue(), raw) {
						t.Errorf("%s has route label %q: a raw path", f.GetName(), l.GetValue())
					}
				}
				if v := l.GetValue(); !patterns[v] && v != "unmatched" && !strings.HasSuffix(v, "/*") {
					t.Errorf("%s has route label %q, not a route pattern", f.GetName(), v)
				}
			}
		}
	}
	for _, want := range []string{"/v1/products/{id}", "/v1/products", "/v1/products/{id}/inventory",
		"/v1/categories/{id}/stats", "/v1/categories/{id}/top", "/v1/search", "/v1/reservations", "/v1/reservations/{id}/cancel"} {
		if !routes[want] {
			t.Errorf("no http_requests_total series with route %q (have %v)", want, routes)
		}
	}
	if n := metricValue(t, a.reg, "http_requests_total",
		map[string]string{"route": "/v1/products/{id}", "method": "GET", "code": "200"}); n != 2 {
		t.Errorf(`http_requests_total{route="/v1/products/{id}",method="GET",code="200"} = %v, want 2`, n)
	}
	if n := metricValue(t, a.reg, "http_requests_total",
		map[string]string{"route": "/v1/products/{id}", "method": "GET", "code": "404"}); n != 1 {
		t.Errorf(`http_requests_total{route="/v1/products/{id}",method="GET",code="404"} = %v, want 1`, n)
	}

	t.Logf("route labels: %v", routes)
	families := []string{
		"http_requests_total", "http_request_duration_seconds",
		"cachex_gets_total", "cachex_recomputes_total", "cachex_recompute_duration_seconds",
		"cachex_refresh_lead_seconds", "cachex_refresh_lock_contended_total", "cachex_redis_errors_total",
		"lockx_acquire_total", "lockx_acquire_attempts_total", "lockx_acquire_wait_seconds", "lockx_held_seconds",
		"lockx_extensions_total", "lockx_lost_total",
		"catalog_reservations_total",
	}
	rec := a.do(http.MethodGet, "/metrics", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	text := rec.Body.String()
	for _, name := range families {
		if !got[name] {
			t.Errorf("family %s is not on the registry", name)
		}
		if !strings.Contains(text, "# TYPE "+name+" ") && !strings.Contains(text, "# TYPE "+strings.TrimSuffix(name, "_total")+" ") {
			t.Errorf("family %s is not served at /metrics", name)
		}
	}
	// The label values the dashboards select on exist from the start.
	for _, result := range []string{"reserved", "insufficient", "fenced", "lock_timeout", "duplicate"} {
		if !strings.Contains(text, `catalog_reservations_total{result="`+result+`"}`) {
			t.Errorf("catalog_reservations_total{result=%q} is not served", result)
		}
	}
	for _, cache := range []string{"product", "category_stats", "top_products", "search"} {
		if !strings.Contains(text, `cache="`+cache+`"`) {
			t.Errorf("no series for cache %q at /metrics", cache)
		}
	}
	if !strings.Contains(text, `name="inventory"`) {
		t.Error("no lockx series for the inventory lock at /metrics")
	}
	// OpenMetrics when asked for.
	rec = a.do(http.MethodGet, "/metrics", "", "Accept", "application/openmetrics-text; version=1.0.0")
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("GET /metrics with Accept openmetrics: Content-Type %q", ct)
	}
}
