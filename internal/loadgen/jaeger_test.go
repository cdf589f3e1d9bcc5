package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// fixtureTrace is the trace of testdata/jaeger_trace.json: Jaeger spells
// its id without the leading zero, and its server span is the child of the
// span loadgen sent, fixtureParent.
const (
	fixtureTrace  = "0af7651916cd43dd8448eb211c80319c"
	fixtureParent = "00f067aa0ba902b7"
)

func readFixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/jaeger_trace.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeJaegerTrace(t *testing.T) {
	spans, err := DecodeJaegerTrace(readFixture(t), fixtureTrace)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]report.TraceSpan{
		"7c4d9e2f0a1b3c58": {SpanID: "7c4d9e2f0a1b3c58", ParentID: fixtureParent, Name: "GET /v1/categories/{id}/stats", StartUs: 1767225600000000, DurationUs: 61250},
		"5b8e2c7d1a9f3e04": {SpanID: "5b8e2c7d1a9f3e04", ParentID: "7c4d9e2f0a1b3c58", Name: "cachex.get", StartUs: 1767225600000100, DurationUs: 60800, Detail: "miss"},
		"3a1f5c0e9b2d4f60": {SpanID: "3a1f5c0e9b2d4f60", ParentID: "5b8e2c7d1a9f3e04", Name: "redis.get", StartUs: 1767225600000150, DurationUs: 420},
		"9d0e1f2a3b4c5d6e": {SpanID: "9d0e1f2a3b4c5d6e", ParentID: "5b8e2c7d1a9f3e04", Name: "SELECT category_stats", StartUs: 1767225600000700, DurationUs: 59000, Error: true},
		"0e1f2a3b4c5d6e7f": {SpanID: "0e1f2a3b4c5d6e7f", ParentID: "5b8e2c7d1a9f3e04", Name: "redis.set", StartUs: 1767225600059800, DurationUs: 900, Error: true, ErrorMessage: "context deadline exceeded"},
	}
	if len(spans) != len(want) {
		t.Fatalf("decoded %d spans, want %d: %+v", len(spans), len(want), spans)
	}
	for _, s := range spans {
		if s != want[s.SpanID] {
			t.Errorf("span %s decoded as %+v, want %+v", s.SpanID, s, want[s.SpanID])
		}
	}

	// Another trace's id, an empty answer and Jaeger's not-found document.
	for _, c := range []struct{ body, id string }{
		{string(readFixture(t)), "4bf92f3577b34da6a3ce929d0e0e4736"},
		{`{"data": []}`, fixtureTrace},
		{`{"data": null, "errors": [{"code": 404, "msg": "trace not found"}]}`, fixtureTrace},
	} {
		if _, err := DecodeJaegerTrace([]byte(c.body), c.id); !errors.Is(err, ErrTraceNotFound) {
			t.Errorf("decode %.40q for %s: %v, want ErrTraceNotFound", c.body, c.id, err)
		}
	}
	if _, err := DecodeJaegerTrace([]byte(`<html>`), fixtureTrace); err == nil || errors.Is(err, ErrTraceNotFound) {
		t.Errorf("decode of a non-JSON answer: %v, want a decode error", err)
	}
}

// stepClock is a virtual clock whose SleepUntil jumps straight to the time
// asked for.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
	return ctx.Err()
}

// fakeJaeger serves GET /api/traces/{id} with answer(n, id), n counting
// the reads from 1.
func fakeJaeger(t *testing.T, answer func(n int64, id string) (int, string)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/api/traces/")
		if r.Method != http.MethodGet || !ok {
			http.NotFound(w, r)
			return
		}
		code, body := answer(n.Add(1), id)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

const notFound = `{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":404,"msg":"trace not found"}]}`

// TestAwaitTraceWaitsForTheServerSpan: Jaeger first does not have the
// trace, then has only some spans (the server span, child of loadgen's, not
// yet), then all: AwaitTrace reads every half second of its clock until
// the server span is there.
func TestAwaitTraceWaitsForTheServerSpan(t *testing.T) {
	full := string(readFixture(t))
	// Without the server span: the spans before it in the fixture.
	partial := full[:strings.Index(full, `"spanID": "7c4d9e2f0a1b3c58"`)]
	partial = partial[:strings.LastIndex(partial, "{")]
	partial = strings.TrimRight(partial, ", \n") + `], "processes": {}}]}`
	if spans, err := DecodeJaegerTrace([]byte(partial), fixtureTrace); err != nil || len(spans) != 1 {
		t.Fatalf("the partial answer decodes to %d spans, %v; want the 1 before the server span", len(spans), err)
	}
	srv, reads := fakeJaeger(t, func(n int64, id string) (int, string) {
		switch {
		case id != fixtureTrace:
			return http.StatusBadRequest, `{"errors":[{"code":400,"msg":"wrong id"}]}`
		case n <= 3:
			return http.StatusNotFound, notFound
		case n == 4:
			return http.StatusOK, partial
		}
		return http.StatusOK, full
	})
	clock := &stepClock{now: time.Unix(1767225600, 0)}
	start := clock.Now()
	j, err := NewJaeger(srv.URL+"/", clock)
	if err != nil {
		t.Fatal(err)
	}
	spans, err := j.AwaitTrace(t.Context(), fixtureTrace, fixtureParent, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 5 || reads.Load() != 5 {
		t.Errorf("got %d spans after %d reads, want 5 after 5 (3 not found, 1 partial)", len(spans), reads.Load())
	}
	if waited := clock.Now().Sub(start); waited != 2*time.Second {
		t.Errorf("waited %v of the clock, want 4 pauses of 500ms", waited)
	}
}

// TestAwaitTraceGivesUp: a trace Jaeger never has is an error wrapping
// ErrTraceNotFound once within has passed; a trace that stays partial is
// returned as it is then.
func TestAwaitTraceGivesUp(t *testing.T) {
	srv, reads := fakeJaeger(t, func(int64, string) (int, string) { return http.StatusNotFound, notFound })
	clock := &stepClock{now: time.Unix(0, 0)}
	j, err := NewJaeger(srv.URL, clock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.AwaitTrace(t.Context(), fixtureTrace, fixtureParent, 2*time.Second); !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("AwaitTrace of a missing trace: %v, want ErrTraceNotFound", err)
	}
	if n := reads.Load(); n != 5 || clock.Now() != time.Unix(2, 0) {
		t.Errorf("%d reads until %v, want 5 (at 0, 0.5, 1, 1.5 and 2s)", n, clock.Now())
	}

	body := string(readFixture(t))
	srv2, _ := fakeJaeger(t, func(int64, string) (int, string) { return http.StatusOK, body })
	j2, err := NewJaeger(srv2.URL, &stepClock{})
	if err != nil {
		t.Fatal(err)
	}
	spans, err := j2.AwaitTrace(t.Context(), fixtureTrace, "1111111111111111", time.Second)
	if err != nil || len(spans) != 5 {
		t.Errorf("AwaitTrace of a trace without the awaited parent: %d spans, %v; want its 5 spans at the deadline", len(spans), err)
	}

	// A Jaeger that is not there: each read fails at once.
	srv.Close()
	if _, err := j.AwaitTrace(t.Context(), fixtureTrace, "", time.Second); err == nil {
		t.Error("AwaitTrace against a closed server: no error")
	}
}

func TestJaegerRefusesBadInput(t *testing.T) {
	for _, base := range []string{"", "ftp://h", "http://", "http://u:p@127.0.0.1"} {
		if _, err := NewJaeger(base, nil); err == nil {
			t.Errorf("NewJaeger(%q): no error", base)
		}
	}
	srv, reads := fakeJaeger(t, func(int64, string) (int, string) { return http.StatusOK, "{}" })
	j, _ := NewJaeger(srv.URL, nil)
	for _, id := range []string{"", "../../admin", "00000000000000000000000000000000", "xyz"} {
		if _, err := j.Trace(t.Context(), id); err == nil {
			t.Errorf("Trace(%q): no error", id)
		}
	}
	if reads.Load() != 0 {
		t.Errorf("%d reads sent for invalid trace ids, want none", reads.Load())
	}
	if got := TraceURL("http://127.0.0.1:16686/", fixtureTrace); got != "http://127.0.0.1:16686/trace/"+fixtureTrace {
		t.Errorf("TraceURL = %q", got)
	}
}
