package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-lab/stampede/internal/loadgen/report/reporttest"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

func TestChartSegments(t *testing.T) {
	nan := math.NaN()
	l := Line{
		X: []float64{0, 1, 2, 3, 4, 5, 6, 7},
		Y: []float64{1, 2, nan, 3, 0, -1, 4, math.Inf(1)},
	}
	got := segments(l, false)
	want := []plotter.XYs{
		{{X: 0, Y: 1}, {X: 1, Y: 2}},
		{{X: 3, Y: 3}, {X: 4, Y: 0}, {X: 5, Y: -1}, {X: 6, Y: 4}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("linear: got %v, want %v", got, want)
	}
	got = segments(l, true)
	want = []plotter.XYs{
		{{X: 0, Y: 1}, {X: 1, Y: 2}},
		{{X: 3, Y: 3}},
		{{X: 6, Y: 4}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("log: got %v, want %v", got, want)
	}
	if got := segments(Line{X: []float64{0, 1}, Y: []float64{nan, nan}}, false); got != nil {
		t.Errorf("all gaps: got %v, want none", got)
	}
}

func TestChartWritePNGRejectsBadInput(t *testing.T) {
	for name, c := range map[string]Chart{
		"mismatched lengths": {Lines: []Line{{Name: "p99", X: []float64{0, 1, 2}, Y: []float64{1, 2}}}},
		"NaN X":              {Lines: []Line{{Name: "p99", X: []float64{0, math.NaN()}, Y: []float64{1, 2}}}},
		"reversed span":      {Shade: []Span{{From: 5, To: 2, Label: "outage"}}},
		"infinite span":      {Shade: []Span{{From: 0, To: math.Inf(1)}}},
		"YMin above YMax":    {YMin: ptr(float64(1)), YMax: ptr(float64(0))},
		"YMax NaN":           {YMax: ptr(math.NaN())},
		"log YMin zero":      {LogY: true, YMin: ptr(float64(0))},
		"negative bar":       {Bars: []Bar{{Label: "a", Value: -1}}},
		"NaN bar":            {Bars: []Bar{{Label: "a", Value: math.NaN()}}},
		"bars and lines":     {Bars: []Bar{{Label: "a", Value: 1}}, Lines: []Line{{Name: "p99", X: []float64{0}, Y: []float64{1}}}},
		"log bars":           {LogY: true, Bars: []Bar{{Label: "a", Value: 1}}},
	} {
		path := filepath.Join(t.TempDir(), "c.png")
		if err := c.WritePNG(path); err == nil {
			t.Errorf("%s: WritePNG succeeded, want an error", name)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: %s was written (stat: %v)", name, path, err)
		}
	}
	err := Chart{Lines: []Line{{Name: "p99", X: []float64{0, 1, 2}, Y: []float64{1}}}}.WritePNG(filepath.Join(t.TempDir(), "c.png"))
	if err == nil || !strings.Contains(err.Error(), "3 X values but 1 Y values") {
		t.Errorf("mismatched lengths: error %v does not name the lengths", err)
	}
}

// TestChartEdgeCasesRender renders charts a scenario can produce when a run
// goes badly: they must give an image, not an error or a panic.
func TestChartEdgeCasesRender(t *testing.T) {
	nan := math.NaN()
	many := make([]Line, 2*len(chartColors)+1)
	for i := range many {
		many[i] = Line{Name: "series " + string(rune('a'+i)), X: []float64{0, 10}, Y: []float64{float64(i), float64(i + 1)}}
	}
	for name, c := range map[string]Chart{
		"zero value":         {},
		"title only":         {Title: "Nothing happened"},
		"empty lines":        {Title: "t", Lines: []Line{{Name: "a"}, {Name: "b", X: []float64{}, Y: []float64{}}}},
		"all NaN":            {Title: "t", Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{nan, nan}}}},
		"log empty":          {Title: "t", LogY: true},
		"log non-positive":   {Title: "t", LogY: true, Lines: []Line{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{0, -3, nan}}}},
		"log single value":   {Title: "t", LogY: true, Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{5, 5}}}},
		"log exact decade":   {Title: "t", LogY: true, Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{10, 10}}}},
		"log sub-unit":       {Title: "t", LogY: true, Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{0.3, 0.9}}}},
		"log YMin only":      {Title: "t", LogY: true, YMin: ptr(float64(100)), Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{5, 7}}}},
		"log YMax only":      {Title: "t", LogY: true, YMax: ptr(float64(1)), Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{5, 7}}}},
		"log fixed no data":  {Title: "t", LogY: true, YMin: ptr(float64(0.5)), YMax: ptr(float64(2))},
		"single point":       {Title: "t", Lines: []Line{{Name: "a", X: []float64{3}, Y: []float64{1}}}},
		"shade only":         {Title: "t", Shade: []Span{{From: 2, To: 2, Label: "instant"}, {From: 3, To: 8, Label: "outage"}}},
		"fixed range":        {Title: "t", YMin: ptr(float64(0)), YMax: ptr(float64(1)), Lines: []Line{{Name: "hit", X: []float64{0, 1, 2}, Y: []float64{-1, 0.5, 2}}}},
		"unnamed lines":      {Title: "t", Lines: []Line{{X: []float64{0, 1}, Y: []float64{1, 2}}}},
		"more than palette":  {Title: "t", Lines: many},
		"negative x":         {Title: "t", Lines: []Line{{Name: "a", X: []float64{-5, -1}, Y: []float64{1, 2}}}},
		"span outside lines": {Title: "t", Shade: []Span{{From: 50, To: 60}}, Lines: []Line{{Name: "a", X: []float64{0, 1}, Y: []float64{1, 2}}}},
		"one bar":            {Title: "t", Bars: []Bar{{Label: "a", Text: "1", Value: 1}}},
		"zero bars":          {Title: "t", YMin: ptr(float64(0)), Bars: []Bar{{Label: "a", Text: "0", Group: "g", Value: 0}, {Label: "b", Value: 0}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c.png")
			if err := c.WritePNG(path); err != nil {
				t.Fatal(err)
			}
			reporttest.DecodePNG(t, path)
		})
	}
}

func TestChartDeterministic(t *testing.T) {
	c := latencyChart()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	if err := c.WritePNG(a); err != nil {
		t.Fatal(err)
	}
	if err := c.WritePNG(b); err != nil {
		t.Fatal(err)
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Error("rendering the same chart twice gave different PNGs")
	}
	img := reporttest.DecodePNG(t, a)
	if b := img.Bounds(); b.Dx() != chartWidthPx || b.Dy() != chartHeightPx {
		t.Errorf("size %dx%d, want %dx%d", b.Dx(), b.Dy(), chartWidthPx, chartHeightPx)
	}
}

func TestChartLogTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Value <= 0 {
				t.Fatalf("Ticks(%v, %v) has non-positive tick %v", lo, hi, tk.Value)
			}
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0.5, 2000, []string{"0.1", "1", "10", "100", "1000", "10000"}},
		{2, 80, []string{"1", "2", "5", "10", "20", "50", "100"}},
		{0.3, 0.9, []string{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"}},
		{10, 10, nil},
		{-1, 10, nil},
	} {
		if got := labels(tc.lo, tc.hi); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Ticks(%v, %v) labels = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestChartYRange(t *testing.T) {
	inf := math.Inf(1)
	// up is hi padded on a log axis from lo: headroom of the decades.
	up := func(lo, hi float64) float64 { return hi * math.Pow(hi/lo, headroom) }
	for _, tc := range []struct {
		name           string
		c              Chart
		dataLo, dataHi float64 // as plot.Add leaves them; +Inf, -Inf for no data
		lo, hi         float64
	}{
		// A free end gets 5% of the range beyond the data; a fixed
		// bottom stays where it is, a fixed top gets the headroom too.
		{"linear empty", Chart{}, inf, -inf, -0.05, 1.05},
		{"linear data", Chart{}, 2, 3, 1.95, 3.05},
		{"linear one value", Chart{}, 4, 4, 2.9, 5.1},
		{"linear fixed", Chart{YMin: ptr(float64(0)), YMax: ptr(float64(1))}, -1, 2, 0, 1.05},
		{"linear YMin above data", Chart{YMin: ptr(float64(5))}, 1, 3, 5, 6.05},
		{"linear YMax below data", Chart{YMax: ptr(float64(1))}, 5, 7, -0.05, 1.05},
		{"linear YMin no data", Chart{YMin: ptr(float64(5))}, inf, -inf, 5, 6.05},
		// On a log axis a free bottom snaps down to a decade.
		{"log empty", Chart{LogY: true}, inf, -inf, 1, up(1, 10)},
		{"log data", Chart{LogY: true}, 0.3, 0.9, 0.1, up(0.1, 0.9)},
		{"log data under a decade", Chart{LogY: true}, 2.5, 9658, 1, up(1, 9658)},
		{"log one value", Chart{LogY: true}, 5, 5, 0.1, up(0.1, 50)},
		{"log YMin above data", Chart{LogY: true, YMin: ptr(float64(100))}, 5, 7, 100, up(100, 1000)},
		{"log YMax below data", Chart{LogY: true, YMax: ptr(float64(1))}, 5, 7, 0.1, up(0.1, 1)},
		{"log YMax no data", Chart{LogY: true, YMax: ptr(float64(1))}, inf, -inf, 0.1, up(0.1, 1)},
		// A label at the top (a Mark's, a Span's) gets twice the room.
		{"linear marked", Chart{YMin: ptr(float64(0)), YMax: ptr(float64(1)), Marks: []Mark{{X: 1, Label: "ends"}}}, 0, 1, 0, 1.1},
		{"linear unlabelled mark", Chart{YMin: ptr(float64(0)), Marks: []Mark{{X: 1}}}, 0, 1, 0, 1.05},
		{"linear marked, free bottom", Chart{Marks: []Mark{{X: 1, Label: "ends"}}}, 0, 10, -0.5, 11},
		{"log shaded", Chart{LogY: true, Shade: []Span{{From: 1, To: 2, Label: "outage"}}}, 1, 100, 1, 100 * math.Pow(100, labelHeadroom)},
	} {
		a := plot.New().Y
		a.Min, a.Max = tc.dataLo, tc.dataHi
		tc.c.setYRange(&a)
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		if !near(a.Min, tc.lo) || !near(a.Max, tc.hi) {
			t.Errorf("%s: range [%v, %v], want [%v, %v]", tc.name, a.Min, a.Max, tc.lo, tc.hi)
		}
		if tc.c.YMax != nil {
			for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
				if tk.Value > *tc.c.YMax*(1+1e-9) {
					t.Errorf("%s: a tick at %v, above YMax %v", tc.name, tk.Value, *tc.c.YMax)
				}
			}
		}
		if tc.dataHi > tc.dataLo && a.Max <= tc.dataHi && (tc.c.YMax == nil || *tc.c.YMax >= tc.dataHi) {
			t.Errorf("%s: the top of the data (%v) is the top of the plot (%v): the line would run along the frame", tc.name, tc.dataHi, a.Max)
		}
	}
}

// TestBarChart draws a bar per Bar in its group's colour, one legend entry
// per group.
func TestBarChart(t *testing.T) {
	c := Chart{File: "c.png", Title: "Redis commands per request", YLabel: "commands / request", YMin: ptr(float64(0)),
		Bars: []Bar{
			{Label: "off ttl", Text: "0.96", Group: "off", Value: 0.96},
			{Label: "off xfetch:1", Text: "1.01", Group: "off", Value: 1.01},
			{Label: "on ttl", Text: "0.06", Group: "on", Value: 0.06},
			{Label: "on xfetch:1", Text: "0.02", Group: "on", Value: 0.02},
		}}
	path := filepath.Join(t.TempDir(), "c.png")
	if err := c.WritePNG(path); err != nil {
		t.Fatal(err)
	}
	counts := reporttest.ColorCounts(reporttest.DecodePNG(t, path))
	off, on := counts[chartColors[0]], counts[chartColors[1]]
	// Two tall blue bars, two short orange ones (and a swatch each).
	if off < 20*on || on < 200 {
		t.Errorf("%d blue and %d orange pixels: want the off bars about 20 times the on bars' area", off, on)
	}
	if n := counts[chartColors[2]]; n != 0 {
		t.Errorf("%d pixels of a third colour for two groups", n)
	}
}
