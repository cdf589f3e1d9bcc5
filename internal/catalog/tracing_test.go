package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// syncBuffer is a log destination safe for the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// spanTree indexes ended spans by name and by id.
type spanTree struct {
	byID map[trace.SpanID]sdktrace.ReadOnlySpan
	all  []sdktrace.ReadOnlySpan
}

func treeOf(spans []sdktrace.ReadOnlySpan) spanTree {
	t := spanTree{byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}, all: spans}
	for _, s := range spans {
		t.byID[s.SpanContext().SpanID()] = s
	}
	return t
}

// named returns the spans called name.
func (t spanTree) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range t.all {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// under reports whether s descends from ancestor.
func (t spanTree) under(s, ancestor sdktrace.ReadOnlySpan) bool {
	for p, ok := t.byID[s.Parent().SpanID()]; ok; p, ok = t.byID[p.Parent().SpanID()] {
		if p.SpanContext().SpanID() == ancestor.SpanContext().SpanID() {
			return true
		}
	}
	return false
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestTracesFollowARequest: a request that sends a sampled traceparent gets
// a server span in that trace, named by method and route, with the cache's
// spans under it; its log lines carry the trace and span ids; its latency
// is an exemplar with the trace id, which /metrics shows in OpenMetrics.
func TestTracesFollowARequest(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var logs syncBuffer
	a := newTestAPI(t, apiOptions{tracer: tp, log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	if rr := a.do(http.MethodGet, "/v1/products/7", "", "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"); rr.Code != http.StatusOK {
		t.Fatalf("GET /v1/products/7 = %d", rr.Code)
	}
	tree := treeOf(rec.Ended())
	servers := tree.named("GET /v1/products/{id}")
	if len(servers) != 1 {
		t.Fatalf("%d server spans named GET /v1/products/{id}; spans: %v", len(servers), names(tree.all))
	}
	server := servers[0]
	if server.SpanContext().TraceID().String() != traceID || server.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("server span in trace %s under %s: the caller's traceparent was not continued", server.SpanContext().TraceID(), server.Parent().SpanID())
	}
	if spanAttr(server, "http.route") != "/v1/products/{id}" {
		t.Fatalf("http.route %q", spanAttr(server, "http.route"))
	}
	gets := tree.named("cachex.get")
	recs := tree.named("cachex.recompute")
	if len(gets) != 1 || len(recs) != 1 || !tree.under(gets[0], server) || !tree.under(recs[0], gets[0]) {
		t.Fatalf("want cachex.get under the server span and cachex.recompute under it; spans: %v", names(tree.all))
	}
	if spanAttr(gets[0], "cachex.cache") != "product" || spanAttr(gets[0], "cachex.outcome") != "miss" {
		t.Fatalf("cachex.get cache %q outcome %q", spanAttr(gets[0], "cachex.cache"), spanAttr(gets[0], "cachex.outcome"))
	}

	var access map[string]any
	for _, l := range logs.lines(t) {
		if l["msg"] == "request" {
			access = l
		}
	}
	if access == nil || access["trace_id"] != traceID || access["span_id"] != server.SpanContext().SpanID().String() {
		t.Fatalf("access line %v: want trace_id %s and the server span's span_id", access, traceID)
	}

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	mrec := httptest.NewRecorder()
	a.handler.ServeHTTP(mrec, req)
	body := mrec.Body.String()
	var exemplar bool
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "http_request_duration_seconds_bucket{") && strings.Contains(line, `route="/v1/products/{id}"`) &&
			strings.Contains(line, `# {trace_id="`+traceID+`"}`) {
			exemplar = true
		}
	}
	if !exemplar {
		t.Fatalf("no exemplar with trace_id %s on http_request_duration_seconds in the OpenMetrics answer:\n%s", traceID, grepLines(body, "http_request_duration_seconds_bucket"))
	}
	if !strings.Contains(body, "cachex_recompute_duration_seconds_bucket{") || !strings.Contains(body, `{trace_id="`+traceID+`"}`) {
		t.Fatal("no exemplar on cachex_recompute_duration_seconds")
	}
	for _, s := range tree.all {
		if strings.Contains(s.Name(), "/metrics") {
			t.Fatalf("a scrape was traced: %s", s.Name())
		}
	}
}

// TestReservationSpans: a reservation's span says the mode and the result,
// with the lock's acquisition under it; a request that comes without a
// traceparent, with the API sampling none, leaves no span.
func TestReservationSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := newTestAPI(t, apiOptions{tracer: tp})

	if rr := a.do(http.MethodPost, "/v1/reservations", reserveBody(3, 1, "unsampled")); rr.Code != http.StatusCreated {
		t.Fatalf("reserve = %d %s", rr.Code, rr.Body)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded for a request the sampler dropped: %v", n, names(rec.Ended()))
	}
	tp2 := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if rr := a.do(http.MethodPost, "/v1/reservations", reserveBody(3, 1, "sampled"), "traceparent", tp2); rr.Code != http.StatusCreated {
		t.Fatalf("reserve = %d %s", rr.Code, rr.Body)
	}
	if rr := a.do("BREW", "/v1/reservations", "", "traceparent", tp2); rr.Code < 400 || rr.Code >= 500 {
		t.Fatalf("BREW = %d, want a 4xx", rr.Code)
	}
	tree := treeOf(rec.Ended())
	res := tree.named("catalog.reserve")
	acq := tree.named("lockx.acquire")
	if len(res) != 1 || len(acq) != 1 || !tree.under(acq[0], res[0]) {
		t.Fatalf("want lockx.acquire under catalog.reserve; spans: %v", names(tree.all))
	}
	if spanAttr(res[0], "catalog.reserve.mode") != string(ModeFenced) || spanAttr(res[0], "catalog.reserve.result") != "reserved" ||
		spanAttr(acq[0], "lockx.result") != "acquired" || spanAttr(acq[0], "lockx.token") == "" {
		t.Fatalf("reserve mode %q result %q; acquire result %q token %q", spanAttr(res[0], "catalog.reserve.mode"),
			spanAttr(res[0], "catalog.reserve.result"), spanAttr(acq[0], "lockx.result"), spanAttr(acq[0], "lockx.token"))
	}
	// A made-up method is "other", and a route without it "unmatched", as
	// on http_requests_total: neither can grow the set of span names.
	if len(tree.named("POST /v1/reservations")) != 1 || len(tree.named("other unmatched")) != 1 {
		t.Fatalf("server spans %v: want POST /v1/reservations and, for the made-up method, other unmatched", names(tree.all))
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestHostileTraceparentsStartTraces: a traceparent that is not one (junk,
// all-zero ids, a NUL byte, 8 KB, a future version with a bad flag) is
// ignored: the request is answered as any other and its span starts a
// trace of its own, with no parent.
func TestHostileTraceparentsStartTraces(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := newTestAPI(t, apiOptions{tracer: tp})
	for _, h := range []string{
		"junk",
		"00-00000000000000000000000000000000-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
		"00-4bf92f3577b34da6\x00ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-" + strings.Repeat("a", 8<<10),
	} {
		rec.Reset()
		req := httptest.NewRequest(http.MethodGet, "/v1/products/7", nil)
		req.Header["Traceparent"] = []string{h} // set raw: Header.Set would not keep a NUL byte out either
		rr := httptest.NewRecorder()
		a.handler.ServeHTTP(rr, req)
		if rr.Code != http.StatusOK {
			t.Fatalf("traceparent %.40q: %d", h, rr.Code)
		}
		servers := treeOf(rec.Ended()).named("GET /v1/products/{id}")
		if len(servers) != 1 || servers[0].Parent().IsValid() || !servers[0].SpanContext().IsValid() {
			t.Fatalf("traceparent %.40q: server spans %v, want one that starts its own trace", h, names(rec.Ended()))
		}
	}
}
