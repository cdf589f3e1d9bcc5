package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// testTraces is a summary's tracing part for two phases: ttl's slowest
// trace read from Jaeger, xfetch:1's not.
func testTraces(jaeger string) Traces {
	return Traces{JaegerURL: jaeger, SlowestTraces: []PhaseTraces{
		{Phase: "ttl", Requests: []loadgen.SlowRequest{
			{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", LatencyMs: 812.5, Code: "200", Endpoint: "category_stats"},
			{TraceID: "5bf92f3577b34da6a3ce929d0e0e4736", SpanID: "10f067aa0ba902b7", LatencyMs: 640.25, Code: "503", Endpoint: "category_stats", Class: "busy"},
		}, Spans: []report.TraceSpan{
			{SpanID: "a000000000000001", ParentID: "00f067aa0ba902b7", Name: "GET /v1/categories/{id}/stats", StartUs: 1_000_000, DurationUs: 810_000},
			{SpanID: "a000000000000002", ParentID: "a000000000000001", Name: "SELECT category_stats", StartUs: 1_000_100, DurationUs: 800_000},
		}},
		{Phase: "xfetch:1", Requests: []loadgen.SlowRequest{
			{TraceID: "6bf92f3577b34da6a3ce929d0e0e4736", SpanID: "20f067aa0ba902b7", LatencyMs: 12, Code: "200", Endpoint: "category_stats"},
		}, Warning: "trace 6bf92f3577b34da6a3ce929d0e0e4736 of phase xfetch:1 not read from Jaeger: after 15s: not found"},
	}}
}

func TestTracesAddToReport(t *testing.T) {
	base := report.Report{Title: "T", Charts: []report.Chart{{File: "latency.png"}}, Notes: []string{"n"}}
	if got := (Traces{}).addTo(base); !reflect.DeepEqual(got, base) {
		t.Errorf("empty Traces changed the report: %+v", got)
	}

	r := testTraces("http://127.0.0.1:16686").addTo(base)
	if len(r.Tables) != 1 || len(r.Tables[0].Rows) != 3 {
		t.Fatalf("tables %+v, want one with a row per request", r.Tables)
	}
	tab := r.Tables[0]
	wantRows := [][]string{
		{"ttl", "812.50", "200", "category_stats", "[4bf92f3577b34da6a3ce929d0e0e4736](http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736)"},
		{"ttl", "640.25", "503 busy", "category_stats", "[5bf92f3577b34da6a3ce929d0e0e4736](http://127.0.0.1:16686/trace/5bf92f3577b34da6a3ce929d0e0e4736)"},
		{"xfetch:1", "12.00", "200", "category_stats", "[6bf92f3577b34da6a3ce929d0e0e4736](http://127.0.0.1:16686/trace/6bf92f3577b34da6a3ce929d0e0e4736)"},
	}
	if !reflect.DeepEqual(tab.Rows, wantRows) {
		t.Errorf("rows:\n%q\nwant\n%q", tab.Rows, wantRows)
	}
	if !strings.Contains(tab.Note, "Warning: trace 6bf92f3577b34da6a3ce929d0e0e4736 of phase xfetch:1 not read") {
		t.Errorf("the note does not carry the warning: %s", tab.Note)
	}
	if len(r.Waterfalls) != 1 || r.Waterfalls[0].File != "trace-ttl.png" || len(r.Waterfalls[0].Spans) != 2 ||
		!strings.Contains(r.Waterfalls[0].Title, "ttl") {
		t.Errorf("waterfalls %+v, want ttl's only", r.Waterfalls)
	}

	bare := testTraces("").addTo(base)
	if id := bare.Tables[0].Rows[0][4]; id != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("without -jaeger-url the trace cell is %q, want the bare id", id)
	}
}

func TestTraceFileNames(t *testing.T) {
	used := map[string]bool{}
	var got []string
	for _, phase := range []string{"ttl", "xfetch:1", "xfetch:0.5", "xfetch-1", "product warm-up", "ttl", "", "ünï"} {
		got = append(got, traceFile(phase, used))
	}
	want := []string{"trace-ttl.png", "trace-xfetch-1.png", "trace-xfetch-0.5.png", "trace-xfetch-1-2.png",
		"trace-product-warm-up.png", "trace-ttl-2.png", "trace-.png", "trace--n-.png"}
	if !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	// Every name is one report.Write accepts.
	var ws []report.Waterfall
	for _, f := range got {
		ws = append(ws, report.Waterfall{File: f})
	}
	if _, err := (report.Report{Waterfalls: ws}).Write(t.TempDir()); err != nil {
		t.Error(err)
	}
}

// TestSummaryTracesRoundTrip: the tracing fields survive summary.json, a
// summary written before them (experiment 1's, its timelines cut short, in
// testdata) loads without them and is written back without them, and a
// replot of a summary with them draws the table and the waterfall. (That a
// replot draws the same bytes each time, waterfalls included, is
// TestCommittedReportsReplotIdentically's check of experiment 4.)
func TestSummaryTracesRoundTrip(t *testing.T) {
	old, err := os.ReadFile("testdata/stampede-summary-before-traces.json")
	if err != nil {
		t.Fatal(err)
	}
	var s StampedeSummary
	if err := json.Unmarshal(old, &s); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Traces, Traces{}) || len(s.Phases) == 0 {
		t.Fatalf("an old summary loads with traces %+v, %d phases", s.Traces, len(s.Phases))
	}
	b, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("slowest_traces")) || bytes.Contains(b, []byte("jaeger_url")) {
		t.Error("a summary without traces is written with tracing fields")
	}

	s.Traces = testTraces("http://127.0.0.1:16686")
	dir := t.TempDir()
	if _, err := writeSummary(dir, &s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadStampedeSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Traces, s.Traces) {
		t.Errorf("traces after a round trip:\n%+v\nwant\n%+v", back.Traces, s.Traces)
	}
	raw := map[string]any{}
	data, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(data, &raw); err != nil || raw["jaeger_url"] != "http://127.0.0.1:16686" || raw["slowest_traces"] == nil {
		t.Errorf("summary.json lacks jaeger_url or slowest_traces at the top level (%v)", err)
	}

	if err := Replot(dir, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "trace-ttl.png")); err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	md := string(report)
	for _, want := range []string{"## Slowest sampled requests per phase",
		"[4bf92f3577b34da6a3ce929d0e0e4736](http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736)",
		"(trace-ttl.png)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "trace-xfetch-1.png")); err == nil {
		t.Error("a waterfall was drawn for a phase whose trace was not read")
	}
}

// checkSlowest asserts that tr lists, without Jaeger, the given phases in
// order, each with 1 to slowestPerPhase requests, slowest first, by valid
// trace and span ids.
func checkSlowest(t *testing.T, tr Traces, phases ...string) {
	t.Helper()
	var got []string
	for _, pt := range tr.SlowestTraces {
		got = append(got, pt.Phase)
		if n := len(pt.Requests); n == 0 || n > slowestPerPhase || pt.Spans != nil || pt.Warning != "" {
			t.Errorf("phase %s: %d requests, %d spans, warning %q", pt.Phase, n, len(pt.Spans), pt.Warning)
		}
		for i, q := range pt.Requests {
			tid, err1 := trace.TraceIDFromHex(q.TraceID)
			sid, err2 := trace.SpanIDFromHex(q.SpanID)
			if err1 != nil || err2 != nil || !tid.IsValid() || !sid.IsValid() || q.Code == "" {
				t.Errorf("phase %s: request %+v has no valid trace context or code", pt.Phase, q)
			}
			if i > 0 && q.LatencyMs > pt.Requests[i-1].LatencyMs {
				t.Errorf("phase %s: requests not slowest first: %v ms after %v ms", pt.Phase, q.LatencyMs, pt.Requests[i-1].LatencyMs)
			}
		}
	}
	if !slices.Equal(got, phases) {
		t.Errorf("slowest traces of phases %q, want %q", got, phases)
	}
}

// jaegerServing answers GET /api/traces/{id} with a two-span trace whose
// server span is the child of parent(id), or 404 when parent returns "".
func jaegerServing(t *testing.T, parent func(traceID string) string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		id, _ := strings.CutPrefix(r.URL.Path, "/api/traces/")
		p := parent(id)
		if p == "" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`)
			return
		}
		fmt.Fprintf(w, `{"data":[{"traceID":%[1]q,"spans":[
			{"traceID":%[1]q,"spanID":"a000000000000001","operationName":"GET /v1/products/{id}","references":[{"refType":"CHILD_OF","traceID":%[1]q,"spanID":%[2]q}],"startTime":1767225600000000,"duration":150000,"tags":[],"processID":"p1"},
			{"traceID":%[1]q,"spanID":"a000000000000002","operationName":"SELECT product","references":[{"refType":"CHILD_OF","traceID":%[1]q,"spanID":"a000000000000001"}],"startTime":1767225600000200,"duration":140000,"tags":[],"processID":"p1"}
			],"processes":{"p1":{"serviceName":"stampede-api","tags":[]}}}]}`, id, p)
	}))
	t.Cleanup(srv.Close)
	return srv, &reads
}

// stepClock jumps to whatever time it is asked to sleep until.
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

// TestCollectTracesWarnsWithoutFailing: with -jaeger-url, a phase whose
// trace Jaeger has gets its spans, one whose trace it never has (or a
// Jaeger that is not there) gets a warning, on stderr too, after the wait
// has passed on the clock.
func TestCollectTracesWarnsWithoutFailing(t *testing.T) {
	slow := loadgen.NewSlowest(slowestPerPhase)
	traceOf := map[string]string{}  // phase -> its slowest trace id
	inJaeger := map[string]string{} // trace id -> loadgen's span id, for the traces Jaeger has
	for i, phase := range []string{"ttl", "xfetch:1"} {
		var tid trace.TraceID
		var sid trace.SpanID
		tid[0], sid[0] = byte(i+1), byte(i+1)
		slow.Record(phase, loadgen.Result{Outcome: loadgen.Outcome{Code: "200", TraceID: tid, SpanID: sid, Sampled: true}, Latency: time.Second})
		traceOf[phase] = tid.String()
		if phase == "ttl" {
			inJaeger[tid.String()] = sid.String()
		}
	}
	jaeger, reads := jaegerServing(t, func(id string) string { return inJaeger[id] })
	clock := &stepClock{now: time.Unix(0, 0)}
	var stderr bytes.Buffer
	e := &Env{cfg: &Config{JaegerURL: jaeger.URL}, slowest: slow, clock: clock, stderr: &syncWriter{w: &stderr}}
	var tr Traces
	e.collectTraces(t.Context(), &tr)
	if len(tr.SlowestTraces) != 2 {
		t.Fatalf("traces %+v, want two phases", tr)
	}
	ttl, xf := tr.SlowestTraces[0], tr.SlowestTraces[1]
	if len(ttl.Spans) != 2 || ttl.Warning != "" || ttl.Spans[0].ParentID != ttl.Requests[0].SpanID {
		t.Errorf("ttl: spans %+v, warning %q; want the two spans, the server's the child of loadgen's", ttl.Spans, ttl.Warning)
	}
	if len(xf.Spans) != 0 || !strings.Contains(xf.Warning, traceOf["xfetch:1"]) || !strings.Contains(stderr.String(), "warning: "+xf.Warning) {
		t.Errorf("xfetch:1: spans %+v, warning %q, stderr %q; want a warning naming its trace, printed", xf.Spans, xf.Warning, stderr.String())
	}
	if clock.Now().Sub(time.Unix(0, 0)) != traceWait || reads.Load() < 10 {
		t.Errorf("waited %v of the clock, %d reads; want the whole %v for the missing trace", clock.Now().Sub(time.Unix(0, 0)), reads.Load(), traceWait)
	}

	jaeger.Close()
	e.collectTraces(t.Context(), &tr)
	for _, pt := range tr.SlowestTraces {
		if pt.Warning == "" || len(pt.Spans) != 0 {
			t.Errorf("phase %s with Jaeger gone: warning %q, %d spans", pt.Phase, pt.Warning, len(pt.Spans))
		}
	}

	// Without -jaeger-url nothing is read: bare ids.
	e.cfg.JaegerURL = ""
	e.collectTraces(t.Context(), &tr)
	if tr.JaegerURL != "" || len(tr.SlowestTraces) != 2 || tr.SlowestTraces[0].Warning != "" || tr.SlowestTraces[0].Spans != nil {
		t.Errorf("without -jaeger-url: %+v", tr)
	}
}

// fakeAPI stands in for the API in a browse run: it answers every read
// with {} after 1 ms, every tenth after slowAnswer, and records the
// traceparent of each (trace id -> span id, and which were slow and
// sampled).
type fakeAPI struct {
	mu      sync.Mutex
	n       int
	parent  map[string]string // trace id -> span id
	slow    map[string]bool
	sampled map[string]bool
}

// slowAnswer is how long fakeAPI takes for its slow answers: long enough
// that no fast answer, however late a busy machine starts or finishes it,
// ranks among the slowest.
const slowAnswer = time.Second

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		w.Header().Set("Content-Type", "text/plain")
		return
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
	f.mu.Lock()
	f.n++
	slow := f.n%10 == 0
	if sc.IsValid() {
		id := sc.TraceID().String()
		f.parent[id], f.slow[id], f.sampled[id] = sc.SpanID().String(), slow, sc.IsSampled()
	}
	f.mu.Unlock()
	d := time.Millisecond
	if slow {
		d = slowAnswer
	}
	time.Sleep(d)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, "{}")
}

func (f *fakeAPI) parentOf(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parent[id]
}

// TestBrowseListsAndDrawsTheSlowestTraces runs browse for a second against
// a stand-in API and a stand-in Jaeger: every request carried a
// traceparent; the summary lists the five slowest, all among the API's
// slow answers; the slowest one's trace was read from Jaeger and drawn;
// report.md links the ids. With -trace-sample 0 nothing is listed or read.
func TestBrowseListsAndDrawsTheSlowestTraces(t *testing.T) {
	api := &fakeAPI{parent: map[string]string{}, slow: map[string]bool{}, sampled: map[string]bool{}}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	jaeger, reads := jaegerServing(t, api.parentOf)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-target", apiSrv.URL, "-metrics-addr", "", "-rate", "100", "-duration", "1s",
		"-jaeger-url", jaeger.URL + "/", "-report-dir", dir, "browse"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runArgs(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	sum, err := readSummary[BrowseSummary](filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	sent := len(api.parent)
	api.mu.Unlock()
	if int64(sent) != sum.Requests || sent < 90 {
		t.Errorf("the API saw %d distinct trace ids, loadgen finished %d requests", sent, sum.Requests)
	}
	if sum.JaegerURL != jaeger.URL || len(sum.SlowestTraces) != 1 || sum.SlowestTraces[0].Phase != "steady" {
		t.Fatalf("traces %+v, want one phase, steady, with Jaeger %s", sum.Traces, jaeger.URL)
	}
	pt := sum.SlowestTraces[0]
	if len(pt.Requests) != slowestPerPhase {
		t.Fatalf("%d slowest requests, want %d", len(pt.Requests), slowestPerPhase)
	}
	api.mu.Lock()
	for i, q := range pt.Requests {
		if !api.slow[q.TraceID] || !api.sampled[q.TraceID] || api.parent[q.TraceID] != q.SpanID || q.LatencyMs < float64(slowAnswer/time.Millisecond) {
			t.Errorf("slowest #%d %+v: slow at the API %v, sampled %v, span %s: want one of the %v answers", i, q,
				api.slow[q.TraceID], api.sampled[q.TraceID], api.parent[q.TraceID], slowAnswer)
		}
		if i > 0 && q.LatencyMs > pt.Requests[i-1].LatencyMs {
			t.Errorf("slowest requests out of order: %v after %v ms", q.LatencyMs, pt.Requests[i-1].LatencyMs)
		}
	}
	api.mu.Unlock()
	if len(pt.Spans) != 2 || pt.Warning != "" || pt.Spans[0].ParentID != pt.Requests[0].SpanID {
		t.Errorf("the slowest trace: spans %+v, warning %q", pt.Spans, pt.Warning)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"](" + jaeger.URL + "/trace/" + pt.Requests[0].TraceID + ")", "(trace-steady.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "trace-steady.png")); err != nil {
		t.Error(err)
	}

	// -trace-sample 0: every request still carries a trace id, flagged 00.
	before := reads.Load()
	dir0 := t.TempDir()
	args = []string{"-target", apiSrv.URL, "-metrics-addr", "", "-rate", "50", "-duration", "500ms", "-trace-sample", "0",
		"-jaeger-url", jaeger.URL, "-report-dir", dir0, "browse"}
	if err := runArgs(ctx, args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir0, "summary.json"))
	if bytes.Contains(data, []byte("slowest_traces")) || reads.Load() != before {
		t.Errorf("-trace-sample 0: summary lists slowest traces or Jaeger was read (%d reads)", reads.Load()-before)
	}
	if files, _ := filepath.Glob(filepath.Join(dir0, "trace-*.png")); len(files) > 0 {
		t.Errorf("-trace-sample 0 drew %v", files)
	}
	api.mu.Lock()
	unsampled := 0
	for _, s := range api.sampled {
		if !s {
			unsampled++
		}
	}
	api.mu.Unlock()
	if unsampled < 20 {
		t.Errorf("%d requests flagged unsampled reached the API, want the second run's", unsampled)
	}
}
