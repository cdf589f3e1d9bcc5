package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogAxisSaysSo: a log-scaled Y axis says so in its label; a linear one
// keeps its label as given.
func TestLogAxisSaysSo(t *testing.T) {
	if got := (Chart{YLabel: "ms", LogY: true}).yLabel(); got != "ms (log scale)" {
		t.Errorf("log axis label %q", got)
	}
	if got := (Chart{YLabel: "ms"}).yLabel(); got != "ms" {
		t.Errorf("linear axis label %q", got)
	}
}

// TestMarksAreDrawnAndChecked: a mark changes the picture (and widens the
// X axis to reach it); a mark at a non-finite X is refused.
func TestMarksAreDrawnAndChecked(t *testing.T) {
	dir := t.TempDir()
	base := Chart{Title: "t", Lines: []Line{{Name: "a", X: []float64{0, 10}, Y: []float64{1, 2}}}}
	marked := base
	marked.Marks = []Mark{{X: 5, Label: "phase ends"}}
	plain, withMark := filepath.Join(dir, "plain.png"), filepath.Join(dir, "mark.png")
	if err := base.WritePNG(plain); err != nil {
		t.Fatal(err)
	}
	if err := marked.WritePNG(withMark); err != nil {
		t.Fatal(err)
	}
	if samePNG(t, plain, withMark) {
		t.Error("the mark did not change the picture")
	}
	bad := base
	bad.Marks = []Mark{{X: math.NaN()}}
	if err := bad.WritePNG(filepath.Join(dir, "bad.png")); err == nil || !strings.Contains(err.Error(), "mark 0") {
		t.Errorf("a NaN mark: %v", err)
	}
}

// TestWaterfallWritesTheErrorMessage: a failed span's message changes the
// picture (it is drawn beside the bar), and a span without an error is
// drawn the same whatever message it carries.
func TestWaterfallWritesTheErrorMessage(t *testing.T) {
	dir := t.TempDir()
	spans := func(errored bool, msg string) []TraceSpan {
		return []TraceSpan{
			{SpanID: "a", Name: "GET /v1/categories/{id}/stats", StartUs: 0, DurationUs: 5000},
			{SpanID: "b", ParentID: "a", Name: "cachex.load_slot", StartUs: 100, DurationUs: 2000, Error: errored, ErrorMessage: msg},
		}
	}
	write := func(name string, s []TraceSpan) string {
		path := filepath.Join(dir, name)
		if err := (Waterfall{Title: "t", Spans: s}).WritePNG(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	noMsg := write("nomsg.png", spans(true, ""))
	deadline := write("deadline.png", spans(true, "context deadline exceeded"))
	ok1, ok2 := write("ok1.png", spans(false, "")), write("ok2.png", spans(false, "ignored"))
	if samePNG(t, noMsg, deadline) {
		t.Error("the error message is not drawn")
	}
	if !samePNG(t, ok1, ok2) {
		t.Error("a span without an error shows a message")
	}
}

// samePNG reports whether the files at a and b hold the same bytes.
func samePNG(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
