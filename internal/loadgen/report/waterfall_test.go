package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testTrace is an API request's trace, given out of order: the server span
// (whose parent, loadgen's span, is not in the trace), a cache get with a
// Redis read, a database query and a Redis write below it, and a
// FOLLOWS_FROM-like late span of the server.
func testTrace() []TraceSpan {
	return []TraceSpan{
		{SpanID: "db", ParentID: "get", Name: "SELECT category_stats", StartUs: 1_000_700, DurationUs: 59_000, Error: true},
		{SpanID: "set", ParentID: "get", Name: "redis.set", StartUs: 1_059_800, DurationUs: 900},
		{SpanID: "srv", ParentID: "loadgen", Name: "GET /v1/categories/{id}/stats", StartUs: 1_000_000, DurationUs: 61_250},
		{SpanID: "log", ParentID: "srv", Name: "write response", StartUs: 1_061_000, DurationUs: 100},
		{SpanID: "rget", ParentID: "get", Name: "redis.get", StartUs: 1_000_150, DurationUs: 420},
		{SpanID: "get", ParentID: "srv", Name: "cachex.get", StartUs: 1_000_100, DurationUs: 60_800, Detail: "miss"},
	}
}

func rowsString(rows []WaterfallRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Repeat(".", r.Depth) + r.Span.SpanID + " ")
	}
	return strings.TrimSpace(b.String())
}

func TestWaterfallRowsOrderDepthFirstByStart(t *testing.T) {
	for _, c := range []struct {
		name  string
		spans []TraceSpan
		want  string
	}{
		{"trace", testTrace(), "srv .get ..rget ..db ..set .log"},
		{"empty", nil, ""},
		// Two roots (no parent, unknown parent), ordered by start; a tie
		// keeps the order given.
		{"roots", []TraceSpan{
			{SpanID: "b", StartUs: 20}, {SpanID: "a", ParentID: "gone", StartUs: 10},
			{SpanID: "c", ParentID: "b", StartUs: 20}, {SpanID: "d", ParentID: "b", StartUs: 20},
		}, "a b .c .d"},
		// A span that names itself as parent is a root; a parent cycle
		// (x <-> y) reaches no root but is still listed, from its earliest
		// span.
		{"cycles", []TraceSpan{
			{SpanID: "y", ParentID: "x", StartUs: 5}, {SpanID: "x", ParentID: "y", StartUs: 3},
			{SpanID: "self", ParentID: "self", StartUs: 9}, {SpanID: "kid", ParentID: "y", StartUs: 6},
		}, "self x .y ..kid"},
	} {
		if got := rowsString(WaterfallRows(c.spans)); got != c.want {
			t.Errorf("%s: rows %q, want %q", c.name, got, c.want)
		}
	}
}

func TestWaterfallLabelsLineUp(t *testing.T) {
	labels := waterfallLabels(WaterfallRows(testTrace()))
	want := []string{
		"GET /v1/categories/{id}/stats",
		"  cachex.get (miss)",
		"    redis.get",
		"    SELECT category_stats",
		"    redis.set",
		"  write response",
	}
	for i, l := range labels {
		if len(l) != len(labels[0]) {
			t.Errorf("label %q is %d characters, the first %d: they would not line up", l, len(l), len(labels[0]))
		}
		if !strings.HasPrefix(l, want[i]+" ") {
			t.Errorf("label %d = %q, want it to start with %q", i, l, want[i])
		}
	}
	if !strings.HasSuffix(labels[0], " 61.25 ms") || !strings.HasSuffix(labels[2], " 0.42 ms") {
		t.Errorf("durations: %q, %q", labels[0], labels[2])
	}
}

// TestWaterfallWritePNG draws a trace and an empty one: PNGs 900 pixels
// wide, taller with more rows, the same bytes when drawn again, and with
// the error span's red on the trace's.
func TestWaterfallWritePNG(t *testing.T) {
	dir := t.TempDir()
	w := Waterfall{File: "trace-ttl.png", Title: "Trace of the slowest ttl request", Spans: testTrace()}
	path := filepath.Join(dir, w.File)
	if err := w.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(path)
	img, err := png.Decode(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != chartWidthPx || b.Dy() < 300 {
		t.Errorf("waterfall is %dx%d, want %d wide and at least 300 high", b.Dx(), b.Dy(), chartWidthPx)
	}
	blue, red := 0, 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			switch c := chartColors; {
			case r>>8 == uint32(c[0].R) && g>>8 == uint32(c[0].G) && b>>8 == uint32(c[0].B):
				blue++
			case r>>8 == uint32(c[3].R) && g>>8 == uint32(c[3].G) && b>>8 == uint32(c[3].B):
				red++
			}
		}
	}
	if blue < 500 || red < 500 {
		t.Errorf("%d blue and %d red pixels: want the spans' bars, the error span's red", blue, red)
	}
	if err := w.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, first) {
		t.Error("the same waterfall drew different bytes")
	}

	var many []TraceSpan
	for i := range 40 {
		many = append(many, TraceSpan{SpanID: string(rune('A' + i)), StartUs: int64(i), DurationUs: 10})
	}
	tall := filepath.Join(dir, "tall.png")
	if err := (Waterfall{Spans: many}).WritePNG(tall); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(tall)
	cfg, err := png.DecodeConfig(f)
	f.Close()
	if err != nil || cfg.Height <= img.Bounds().Dy() {
		t.Errorf("40 spans drew %d pixels high (%v), 6 spans %d: want taller", cfg.Height, err, img.Bounds().Dy())
	}
	if err := (Waterfall{}).WritePNG(filepath.Join(dir, "empty.png")); err != nil {
		t.Errorf("empty waterfall: %v", err)
	}
}

// TestReportWritesWaterfalls: a report's waterfalls are drawn into its
// directory and shown after its charts; their file names follow the
// charts' rules and may not collide with a chart's.
func TestReportWritesWaterfalls(t *testing.T) {
	dir := t.TempDir()
	r := Report{Title: "T", Charts: []Chart{{File: "latency.png", Title: "Latency"}},
		Waterfalls: []Waterfall{{File: "trace-xfetch-1.png", Title: "Slowest [xfetch:1]", Spans: testTrace()}}}
	files, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || filepath.Base(files[1]) != "trace-xfetch-1.png" {
		t.Errorf("wrote %v, want the chart, the waterfall, report.md", files)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	chart := strings.Index(string(md), "![Latency](latency.png)")
	wf := strings.Index(string(md), `![Slowest \[xfetch:1\]](trace-xfetch-1.png)`)
	if chart < 0 || wf < chart {
		t.Errorf("report.md does not show the waterfall after the chart:\n%s", md)
	}
	// Only waterfalls: the section is there all the same.
	if _, err := (Report{Waterfalls: r.Waterfalls}).Write(dir); err != nil {
		t.Fatal(err)
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "report.md")); !strings.Contains(string(md), "## Charts\n\n![Slowest") {
		t.Errorf("report.md without charts does not show the waterfall:\n%s", md)
	}
	for _, bad := range []Report{
		{Charts: []Chart{{File: "a.png"}}, Waterfalls: []Waterfall{{File: "a.png"}}},
		{Waterfalls: []Waterfall{{File: "../trace.png"}}},
		{Waterfalls: []Waterfall{{File: "trace.svg"}}},
	} {
		if _, err := bad.Write(t.TempDir()); err == nil {
			t.Errorf("Write(%+v): no error", bad.Waterfalls)
		}
	}
}
