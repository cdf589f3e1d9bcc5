package loadgen

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceparentRE is a W3C traceparent of version 00 with lowercase ids.
var traceparentRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$`)

// headerLog records the headers of every request a test server receives.
type headerLog struct {
	mu      sync.Mutex
	headers []http.Header
}

func (l *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.headers = append(l.headers, r.Header.Clone())
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{}`))
}

func (l *headerLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.headers...)
}

// extract parses h's traceparent the way the API's propagator does.
func extract(h http.Header) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h))
	return trace.SpanContextFromContext(ctx)
}

// TestClientSendsATraceparent: Get, PostJSON, AdminPut and GetJSON each send
// a valid traceparent that the OpenTelemetry propagator parses back into
// the ids and flag the Outcome reports; Scrape sends none.
func TestClientSendsATraceparent(t *testing.T) {
	log := &headerLog{}
	c, _ := newTestClient(t, log, 5*time.Second)
	ctx := t.Context()
	var outs []Outcome
	outs = append(outs, c.Get(ctx, "product", "/v1/products/1", nil))
	out, _ := c.PostJSON(ctx, "reserve", "/v1/reservations", map[string]int{"quantity": 1}, map[string]string{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}, nil)
	outs = append(outs, out)
	if err := c.AdminPut(ctx, "/admin/faults", "t", map[string]int{}); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := c.GetJSON(ctx, "inventory", "/v1/products/1/inventory", &v); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Scrape(ctx) // "{}" is no metrics text; only the header matters

	hs := log.all()
	if len(hs) != 5 {
		t.Fatalf("server saw %d requests, want 5", len(hs))
	}
	seen := map[trace.TraceID]bool{}
	for i, h := range hs[:4] {
		tp := h.Get("traceparent")
		if !traceparentRE.MatchString(tp) {
			t.Errorf("request %d: traceparent %q is not a W3C traceparent", i, tp)
		}
		sc := extract(h)
		if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() {
			t.Errorf("request %d: traceparent %q parses to valid %v remote %v sampled %v, want all true (NewClient samples every request)",
				i, tp, sc.IsValid(), sc.IsRemote(), sc.IsSampled())
		}
		if seen[sc.TraceID()] {
			t.Errorf("request %d: trace id %s sent twice", i, sc.TraceID())
		}
		seen[sc.TraceID()] = true
		if i < len(outs) {
			if o := outs[i]; o.TraceID != sc.TraceID() || o.SpanID != sc.SpanID() || !o.Sampled {
				t.Errorf("request %d: outcome has %s/%s sampled %v, the header said %s/%s", i, o.TraceID, o.SpanID, o.Sampled, sc.TraceID(), sc.SpanID())
			}
		}
	}
	if sc := extract(hs[1]); sc.TraceID().String() == "11111111111111111111111111111111" {
		t.Error("a caller's traceparent header replaced the client's own")
	}
	if tp := hs[4].Get("traceparent"); tp != "" {
		t.Errorf("the /metrics scrape sent traceparent %q, want none", tp)
	}
}

// TestTraceIDsAreUniqueUnderConcurrency sends many requests at once
// through two clients (as Targets spreads a run): every trace id and every
// span id the server receives is distinct, and each outcome names the ids
// its request carried.
func TestTraceIDsAreUniqueUnderConcurrency(t *testing.T) {
	const goroutines, each = 32, 40
	log := &headerLog{}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	ts, err := NewTargets([]*url.URL{u, u}, 5*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.CloseIdleConnections)
	var (
		mu   sync.Mutex
		outs []Outcome
		wg   sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				out := ts.Pick(int64(g*each+i)).Get(t.Context(), "product", "/v1/products/1", nil)
				mu.Lock()
				outs = append(outs, out)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	traces, spans := map[trace.TraceID]bool{}, map[trace.SpanID]bool{}
	for _, h := range log.all() {
		sc := extract(h)
		if !sc.IsValid() {
			t.Fatalf("invalid traceparent %q", h.Get("traceparent"))
		}
		traces[sc.TraceID()], spans[sc.SpanID()] = true, true
	}
	const n = goroutines * each
	if len(traces) != n || len(spans) != n {
		t.Errorf("%d requests carried %d distinct trace ids and %d distinct span ids, want %d each", n, len(traces), len(spans), n)
	}
	for _, o := range outs {
		if o.Err != nil || !traces[o.TraceID] || !spans[o.SpanID] {
			t.Fatalf("outcome %+v: names ids the server never received", o)
		}
	}
}

// TestTraceSampleFlags: -trace-sample 0 flags every traceparent 00 and 1
// flags every one 01, each still with fresh valid ids; 0.5 flags about
// half.
func TestTraceSampleFlags(t *testing.T) {
	for _, c := range []struct {
		sample float64
		flag   string
	}{{0, "00"}, {1, "01"}} {
		log := &headerLog{}
		srv := httptest.NewServer(log)
		u, _ := url.Parse(srv.URL)
		ts, err := NewTargets([]*url.URL{u}, 5*time.Second, c.sample)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			if out := ts.Pick(0).Get(t.Context(), "product", "/", nil); out.Sampled != (c.sample == 1) || !out.TraceID.IsValid() {
				t.Errorf("sample %v: outcome sampled %v trace %s", c.sample, out.Sampled, out.TraceID)
			}
		}
		for _, h := range log.all() {
			tp := h.Get("traceparent")
			if !traceparentRE.MatchString(tp) || tp[len(tp)-2:] != c.flag || !extract(h).IsValid() {
				t.Errorf("sample %v: traceparent %q, want a valid one flagged %s", c.sample, tp, c.flag)
			}
		}
		ts.CloseIdleConnections()
		srv.Close()
	}

	// Half: 4000 draws, binomial sd 0.0079, so [0.45, 0.55] is over 6 sd.
	g := newTraceIDs(0.5)
	sampled := 0
	const draws = 4000
	for range draws {
		if g.next().IsSampled() {
			sampled++
		}
	}
	if f := float64(sampled) / draws; math.Abs(f-0.5) > 0.05 {
		t.Errorf("-trace-sample 0.5 flagged %.3f of %d requests sampled", f, draws)
	}
}

func TestNewTargetsRefusesABadTraceSample(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, s := range []float64{-0.1, 1.01, math.NaN(), math.Inf(1)} {
		if _, err := NewTargets([]*url.URL{u}, time.Second, s); err == nil {
			t.Errorf("NewTargets with trace sample %v: no error", s)
		}
	}
}
