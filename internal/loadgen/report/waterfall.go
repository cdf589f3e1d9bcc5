package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TraceSpan is one span of a trace, as a Waterfall draws it and
// summary.json keeps it. Times are whole microseconds, as tracing backends
// such as Jaeger give them.
type TraceSpan struct {
	SpanID string `json:"span_id"`
	// ParentID is the parent span's id; a span whose parent is empty, is
	// itself, or is not in the trace (the API's server span, whose parent
	// is loadgen's) is a root.
	ParentID string `json:"parent_id,omitempty"`
	// Name is the span's operation name.
	Name string `json:"name"`
	// StartUs is the start in microseconds since the Unix epoch.
	StartUs    int64 `json:"start_us"`
	DurationUs int64 `json:"duration_us"`
	// Error marks a span that recorded an error; it is drawn red, with
	// ErrorMessage (its status description, when it gave one) right of its
	// bar.
	Error        bool   `json:"error,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	// Detail is what the span says it came to (a cache read's outcome, a
	// recompute's reason, a lock's result), shown after its name.
	Detail string `json:"detail,omitempty"`
}

// WaterfallRow is one row of a waterfall: a span and its depth below its
// root (0 for a root).
type WaterfallRow struct {
	Span  TraceSpan
	Depth int
}

// WaterfallRows orders spans as a waterfall shows them, depth first: each
// root, then its children (each followed by its own descendants), siblings
// and roots by start time (ties in the order given). Every span appears
// exactly once: spans whose parents form a cycle, and so reach no root,
// follow the rest as if the earliest of them were a root.
func WaterfallRows(spans []TraceSpan) []WaterfallRow {
	ids := make(map[string]bool, len(spans))
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	children := map[string][]int{}
	var roots []int
	for i, s := range spans {
		if s.ParentID == "" || s.ParentID == s.SpanID || !ids[s.ParentID] {
			roots = append(roots, i)
		} else {
			children[s.ParentID] = append(children[s.ParentID], i)
		}
	}
	byStart := func(list []int) {
		slices.SortStableFunc(list, func(a, b int) int { return cmp.Compare(spans[a].StartUs, spans[b].StartUs) })
	}
	byStart(roots)
	for _, c := range children {
		byStart(c)
	}
	rows := make([]WaterfallRow, 0, len(spans))
	seen := make([]bool, len(spans))
	var visit func(i, depth int)
	visit = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		rows = append(rows, WaterfallRow{Span: spans[i], Depth: depth})
		for _, c := range children[spans[i].SpanID] {
			visit(c, depth+1)
		}
	}
	for _, r := range roots {
		visit(r, 0)
	}
	var rest []int
	for i := range spans {
		if !seen[i] {
			rest = append(rest, i)
		}
	}
	byStart(rest)
	for _, r := range rest {
		visit(r, 0)
	}
	return rows
}

// Waterfall is one PNG chart of a trace: a horizontal bar per span in
// WaterfallRows order, from its start to its end in milliseconds since the
// trace's first span started, labelled on the left with its name (indented
// by depth), its outcome (Detail, in brackets) and duration. A span that
// recorded an error is red, with its error message right of its bar; a
// legend says so.
type Waterfall struct {
	// File is the PNG's name inside the report directory, as Chart.File.
	File  string
	Title string
	Spans []TraceSpan
}

// Rendering: 900 pixels wide, a row per span (at most maxWaterfallRows, the
// first in row order), names cut to maxSpanName characters.
const (
	waterfallRowPx   = 20
	waterfallExtraPx = 110 // title, X axis, margins
	maxWaterfallRows = 60
	maxSpanName      = 48
)

// WritePNG renders w at path, replacing any file there. Like a Chart, the
// same Waterfall always gives the same bytes, and one without spans renders
// as an empty plot.
func (w Waterfall) WritePNG(path string) error {
	rows := WaterfallRows(w.Spans)
	title := w.Title
	if len(rows) > maxWaterfallRows {
		title += fmt.Sprintf(" (first %d of %d spans)", maxWaterfallRows, len(rows))
		rows = rows[:maxWaterfallRows]
	}
	height := max(chartHeightPx*3/4, waterfallExtraPx+waterfallRowPx*len(rows))
	img := vgimg.NewWith(
		vgimg.UseWH(vg.Length(chartWidthPx)*vg.Inch/chartDPI, vg.Length(height)*vg.Inch/chartDPI),
		vgimg.UseDPI(chartDPI),
	)
	drawWaterfall(draw.New(img), title, rows)

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return errors.Join(err, f.Close())
}

// drawWaterfall renders rows onto dc.
func drawWaterfall(dc draw.Canvas, title string, rows []WaterfallRow) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = "ms since the trace's first span started;  (…) after a name: what the span came to"
	p.X.Tick.Marker = plainTicks{}

	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Vertical.Width = color.Gray{Y: 0xc8}, vg.Points(0.5)
	grid.Horizontal.Color = nil
	p.Add(grid)

	bars := waterfallBars{rows: rows}
	if len(rows) > 0 {
		bars.t0 = rows[0].Span.StartUs
		for _, r := range rows {
			bars.t0 = min(bars.t0, r.Span.StartUs)
		}
	}
	p.Add(bars)
	p.X.Min = 0
	p.X.Max *= 1.02 // room after the last span's end
	if !(p.X.Max > 0) {
		p.X.Max = 1
	}
	p.Y.Min, p.Y.Max = -0.5, max(float64(len(rows))-0.5, 0.5)
	p.Y.Tick.Marker = rowTicks(waterfallLabels(rows))
	p.Y.Tick.Label.Font = font.Font{Typeface: plot.DefaultFont.Typeface, Variant: "Mono", Size: vg.Points(9)}

	const margin = 8
	area := draw.Crop(dc, vg.Points(margin), vg.Points(-margin), vg.Points(margin/2), vg.Points(-margin))
	// The legend is a line under the title.
	top := area.Max.Y
	if title != "" {
		top -= p.Title.TextStyle.Rectangle(title).Size().Y + p.Title.Padding
	}
	// plot.Draw paints the background first: the legend goes on after it,
	// in the room the larger title padding leaves.
	p.Title.Padding += waterfallLegendHeight(p)
	p.Draw(area)
	drawWaterfallLegend(area, top, p)
}

// waterfallLegend is the waterfall's key: a colour each, and what it means.
var waterfallLegend = []struct {
	color int // index in chartColors
	text  string
}{
	{0, "span"},
	{3, "span that recorded an error (its message right of the bar)"},
}

// legendStyle is the waterfall legend's text style.
func legendStyle(p *plot.Plot) text.Style {
	return text.Style{Color: color.Gray{Y: 0x30}, Font: font.From(plot.DefaultFont, vg.Points(10)),
		XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.TextHandler}
}

// waterfallLegendHeight is the height of the legend's line.
func waterfallLegendHeight(p *plot.Plot) vg.Length {
	return legendStyle(p).Rectangle("M").Size().Y + vg.Points(6)
}

// drawWaterfallLegend writes the legend on one line below y, starting at
// c's left.
func drawWaterfallLegend(c draw.Canvas, y vg.Length, p *plot.Plot) {
	sty := legendStyle(p)
	size := vg.Points(9)
	line := waterfallLegendHeight(p)
	mid := y - line/2
	x := c.Min.X + vg.Points(4)
	for _, e := range waterfallLegend {
		c.FillPolygon(chartColors[e.color], []vg.Point{{X: x, Y: mid - size/2}, {X: x + size, Y: mid - size/2},
			{X: x + size, Y: mid + size/2}, {X: x, Y: mid + size/2}})
		x += size + vg.Points(4)
		c.FillText(sty, vg.Point{X: x, Y: mid}, e.text)
		x += sty.Rectangle(e.text).Size().X + vg.Points(16)
	}
}

// waterfallLabels returns each row's label: its name indented two spaces
// per level and its duration, padded to one width so that, in the
// monospace font the Y axis right-aligns them in, they line up on the left.
func waterfallLabels(rows []WaterfallRow) []string {
	names := make([]string, len(rows))
	width := 0
	for i, r := range rows {
		name := r.Span.Name
		if name == "" {
			name = "(unnamed)"
		}
		if r.Span.Detail != "" {
			name += " (" + r.Span.Detail + ")"
		}
		if utf8.RuneCountInString(name) > maxSpanName {
			name = string([]rune(name)[:maxSpanName-1]) + "…"
		}
		names[i] = strings.Repeat("  ", min(r.Depth, 12)) + name
		width = max(width, utf8.RuneCountInString(names[i]))
	}
	labels := make([]string, len(rows))
	for i, r := range rows {
		labels[i] = fmt.Sprintf("%-*s %11s", width, names[i], msLabel(r.Span.DurationUs))
	}
	return labels
}

// msLabel formats a duration in microseconds as milliseconds: "12.35 ms".
func msLabel(us int64) string {
	return strconv.FormatFloat(float64(us)/1000, 'f', 2, 64) + " ms"
}

// rowTicks labels the rows of a waterfall, top row first: row i is at
// Y = len-1-i.
type rowTicks []string

// Ticks implements plot.Ticker.
func (t rowTicks) Ticks(float64, float64) []plot.Tick {
	ticks := make([]plot.Tick, len(t))
	for i, l := range t {
		ticks[i] = plot.Tick{Value: float64(len(t) - 1 - i), Label: l}
	}
	return ticks
}

// waterfallBars draws the rows' spans as bars, X in milliseconds since t0
// (microseconds since the epoch).
type waterfallBars struct {
	rows []WaterfallRow
	t0   int64
}

// span returns row i's X range in milliseconds.
func (b waterfallBars) span(i int) (from, to float64) {
	s := b.rows[i].Span
	from = float64(s.StartUs-b.t0) / 1000
	return from, from + float64(max(s.DurationUs, 0))/1000
}

// Plot implements plot.Plotter.
func (b waterfallBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(b.rows)
	for i, r := range b.rows {
		from, to := b.span(i)
		x0, x1 := trX(from), trX(to)
		if x1-x0 < 1 { // keep an instant visible
			x1 = x0 + 1
		}
		y := float64(n - 1 - i)
		y0, y1 := trY(y-0.35), trY(y+0.35)
		col := chartColors[0]
		if r.Span.Error {
			col = chartColors[3]
		}
		c.FillPolygon(col, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
		if r.Span.Error {
			b.errorText(c, p, r.Span.ErrorMessage, x1, trY(y))
		}
	}
}

// maxErrorText bounds the error message drawn beside a bar, in characters.
const maxErrorText = 60

// errorText writes "error: msg" right of a red bar ending at x, at row
// height y, or left of the bar's end when it would run out of the plot.
func (b waterfallBars) errorText(c draw.Canvas, p *plot.Plot, msg string, x, y vg.Length) {
	if msg == "" {
		msg = "(no message)"
	}
	if utf8.RuneCountInString(msg) > maxErrorText {
		msg = string([]rune(msg)[:maxErrorText-1]) + "…"
	}
	msg = "error: " + msg
	sty := text.Style{Color: chartColors[3], Font: font.From(plot.DefaultFont, vg.Points(8)),
		XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.TextHandler}
	at := x + vg.Points(3)
	if at+sty.Rectangle(msg).Size().X > c.Max.X {
		sty.XAlign, sty.Color, at = draw.XRight, color.White, x-vg.Points(3)
	}
	c.FillText(sty, vg.Point{X: at, Y: y}, msg)
}

// DataRange implements plot.DataRanger: X from 0 to the last span's end.
func (b waterfallBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	for i := range b.rows {
		_, to := b.span(i)
		xmax = max(xmax, to)
	}
	return 0, xmax, -0.5, float64(len(b.rows)) - 0.5
}
