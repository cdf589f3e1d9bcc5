package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Line is one named series of a Chart. X is in seconds unless the chart's
// XLabel names another unit (capacity plots offered requests per second).
// X and Y must have the same length and every X must be finite; points are
// joined in the order given. A NaN or infinite Y is a gap: the point is
// skipped and the line is broken there. A point with no neighbour on either
// side is drawn as a dot so that it stays visible. A Line without a Name
// has no legend entry.
type Line struct {
	Name string
	X, Y []float64
}

// Bar is one bar of a bar Chart: Label under it on the X axis, Text (its
// value as the reader should read it, e.g. "1.01") above it. Bars of the
// same Group share a colour and one legend entry; a Bar without a Group
// has none.
type Bar struct {
	Label, Text, Group string
	Value              float64
}

// Span is an X range [From, To] that a Chart shades as a light grey band
// behind the lines, with Label written at the top of the band.
type Span struct {
	From, To float64
	Label    string
}

// Mark is a vertical dashed line a Chart draws at X, with Label written
// left of it at the top: where a phase's schedule ended, say.
type Mark struct {
	X     float64
	Label string
}

// Chart is one PNG line chart. A Chart without any drawable point, the zero
// Chart included, renders as an empty plot (with its title and labels), so a
// scenario never loses its report because a series stayed empty.
type Chart struct {
	// File is the PNG's name inside the report directory, such as
	// "latency.png": letters, digits, '.', '_' and '-', ending in ".png".
	// Only Report.Write looks at it.
	File                  string
	Title, XLabel, YLabel string
	Lines                 []Line
	// LogY makes the Y axis log10 (for latencies); the axis label then
	// ends in "(log scale)". Y values <= 0 cannot be drawn on it and are
	// treated as gaps.
	LogY bool
	// Marks are drawn over the lines.
	Marks []Mark
	// Shade is drawn behind the lines, for example an outage window.
	Shade []Span
	// Bars, when given, make a bar chart: one bar per Bar, in order, from
	// 0 (Value must be finite and >= 0), with no Lines, Marks or Shade and
	// a linear Y axis.
	Bars []Bar
	// YMin and YMax, when set, fix that end of the Y range (a hit ratio
	// wants 0 and 1); points outside it are clipped. The axis itself ends
	// at YMin and a little above YMax (headroom), so a line at YMax stays
	// visible. On a log axis they must be positive.
	YMin, YMax *float64
}

// Rendered size: 900x420 pixels at the canvas resolution.
const (
	chartDPI      = 96
	chartWidthPx  = 900
	chartHeightPx = 420
)

// chartColors is the fixed line palette (Tableau 10 without its grey, which
// would blend with the grid and the shading). It is never modified. Lines
// past its length reuse the colours with a dashed stroke.
var chartColors = [...]color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
}

// lineStyle is the stroke of the i-th line of a chart.
func lineStyle(i int) draw.LineStyle {
	sty := draw.LineStyle{
		Color: chartColors[i%len(chartColors)],
		Width: vg.Points(1.5),
	}
	if i >= len(chartColors) {
		sty.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	return sty
}

// validate reports the first problem with c's data; it does not look at
// c.File.
func (c Chart) validate() error {
	for i, l := range c.Lines {
		if len(l.X) != len(l.Y) {
			return fmt.Errorf("line %d (%q): %d X values but %d Y values", i, l.Name, len(l.X), len(l.Y))
		}
		for j, x := range l.X {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("line %d (%q): X[%d] is %v; only Y may be NaN (a gap)", i, l.Name, j, x)
			}
		}
	}
	for i, b := range c.Bars {
		if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) || b.Value < 0 {
			return fmt.Errorf("bar %d (%q): value %v, want a finite value >= 0", i, b.Label, b.Value)
		}
	}
	if len(c.Bars) > 0 && (len(c.Lines) > 0 || len(c.Marks) > 0 || len(c.Shade) > 0 || c.LogY) {
		return errors.New("a bar chart has no lines, marks, shading or log axis")
	}
	for i, m := range c.Marks {
		if math.IsNaN(m.X) || math.IsInf(m.X, 0) {
			return fmt.Errorf("mark %d (%q): X is %v, want a finite value", i, m.Label, m.X)
		}
	}
	for i, s := range c.Shade {
		if math.IsNaN(s.From) || math.IsInf(s.From, 0) || math.IsNaN(s.To) || math.IsInf(s.To, 0) || s.From > s.To {
			return fmt.Errorf("shade %d (%q): want finite From <= To, got [%v, %v]", i, s.Label, s.From, s.To)
		}
	}
	for _, b := range []struct {
		name string
		v    *float64
	}{{"YMin", c.YMin}, {"YMax", c.YMax}} {
		if b.v == nil {
			continue
		}
		if math.IsNaN(*b.v) || math.IsInf(*b.v, 0) {
			return fmt.Errorf("%s is %v, want a finite value", b.name, *b.v)
		}
		if c.LogY && *b.v <= 0 {
			return fmt.Errorf("%s is %v, want > 0 on a log axis", b.name, *b.v)
		}
	}
	if c.YMin != nil && c.YMax != nil && *c.YMin >= *c.YMax {
		return fmt.Errorf("YMin %v is not below YMax %v", *c.YMin, *c.YMax)
	}
	return nil
}

// segments splits a line at its gaps: non-finite Y values and, when logY,
// Y values <= 0.
func segments(l Line, logY bool) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for i, y := range l.Y {
		if math.IsNaN(y) || math.IsInf(y, 0) || (logY && y <= 0) {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: l.X[i], Y: y})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// WritePNG renders c as a 900x420 PNG at path, replacing any file there:
// one coloured line per Line (fixed palette, so the same chart gives the
// same bytes), or one bar per Bar, grid lines, shaded spans, and a legend
// right of the plot listing every named Line (every Bar's Group). It
// returns an error, without writing, for mismatched X/Y lengths, non-finite
// X values, a bad Span, Bar or Y range; a chart without any drawable point
// still renders as an empty plot.
func (c Chart) WritePNG(path string) error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("chart %q: %w", c.Title, err)
	}
	img := vgimg.NewWith(
		vgimg.UseWH(vg.Length(chartWidthPx)*vg.Inch/chartDPI, vg.Length(chartHeightPx)*vg.Inch/chartDPI),
		vgimg.UseDPI(chartDPI),
	)
	c.draw(draw.New(img))

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return errors.Join(err, f.Close())
}

// yLabel is the Y axis label: YLabel, followed by "(log scale)" on a log
// axis.
func (c Chart) yLabel() string {
	if c.LogY {
		return strings.TrimSpace(c.YLabel + " (log scale)")
	}
	return c.YLabel
}

// draw renders the validated chart onto dc.
func (c Chart) draw(dc draw.Canvas) {
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.yLabel()
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}

	for _, s := range c.Shade {
		p.Add(shade{s})
	}
	grid := plotter.NewGrid()
	gridColor := color.Gray{Y: 0xc8}
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	grid.Vertical.Width, grid.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	p.Add(grid)

	legend := plot.NewLegend()
	legend.Left, legend.Top = true, true
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.Padding = vg.Points(2)
	if len(c.Bars) > 0 {
		grid.Vertical.Color = nil // the categories need no vertical lines
		c.addBars(p, &legend)
	}
	for i, l := range c.Lines {
		sty := lineStyle(i)
		for _, seg := range segments(l, c.LogY) {
			if len(seg) == 1 {
				dot := &plotter.Scatter{XYs: seg, GlyphStyle: draw.GlyphStyle{
					Color: sty.Color, Radius: vg.Points(2), Shape: draw.CircleGlyph{},
				}}
				p.Add(dot)
				continue
			}
			p.Add(&plotter.Line{XYs: seg, LineStyle: sty})
		}
		if l.Name != "" {
			legend.Add(l.Name, &plotter.Line{LineStyle: sty})
		}
	}

	// Shade spans and marks widen the X axis; plot.Add only knows the
	// lines.
	for _, s := range c.Shade {
		p.X.Min = math.Min(p.X.Min, s.From)
		p.X.Max = math.Max(p.X.Max, s.To)
	}
	for _, m := range c.Marks {
		p.Add(mark{m})
		p.X.Min = math.Min(p.X.Min, m.X)
		p.X.Max = math.Max(p.X.Max, m.X)
	}
	c.setYRange(&p.Y)

	const margin = 8
	area := draw.Crop(dc, vg.Points(margin), vg.Points(-margin), vg.Points(margin/2), vg.Points(-margin))
	if r := legend.Rectangle(area); r.Size().X > 0 {
		w := r.Size().X + vg.Points(margin)
		lc := draw.Crop(area, area.Size().X-w+vg.Points(margin), 0, 0, 0)
		if c.Title != "" {
			lc.Max.Y -= p.Title.TextStyle.Rectangle(c.Title).Size().Y + p.Title.Padding
		}
		legend.Draw(lc)
		area = draw.Crop(area, 0, -w, 0, 0)
	}
	p.Draw(area)
}

// barWidth is the width of a bar chart's bars.
const barWidth = 60 // points

// addBars adds c's bars to p, each coloured by its Group (in the order the
// groups first appear) with a legend entry per group, its Text above it and
// its Label on the X axis.
func (c Chart) addBars(p *plot.Plot, legend *plot.Legend) {
	groups := map[string]int{}
	labels := make([]string, len(c.Bars))
	var texts plotter.XYLabels
	for i, b := range c.Bars {
		g, seen := groups[b.Group]
		if !seen {
			g = len(groups)
			groups[b.Group] = g
		}
		bc, _ := plotter.NewBarChart(plotter.Values{b.Value}, vg.Points(barWidth)) // width > 0
		bc.XMin = float64(i)
		bc.Color = chartColors[g%len(chartColors)]
		bc.LineStyle.Width = 0
		p.Add(bc)
		if !seen && b.Group != "" {
			legend.Add(b.Group, bc)
		}
		labels[i] = b.Label
		texts.XYs = append(texts.XYs, plotter.XY{X: float64(i), Y: b.Value})
		texts.Labels = append(texts.Labels, b.Text)
	}
	tl, _ := plotter.NewLabels(texts) // as many labels as points
	for i := range tl.TextStyle {
		tl.TextStyle[i].Font.Size = vg.Points(11)
		tl.TextStyle[i].XAlign = draw.XCenter
	}
	tl.Offset = vg.Point{Y: vg.Points(4)}
	p.Add(tl)
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(c.Bars))-0.5 // half a category beside the outer bars
}

// setYRange sets the Y axis range: the data's (p.Add has set a.Min and
// a.Max, infinite when there is none) with YMin and YMax applied, widened so
// that it is never empty or reversed, then padded (see pad) so that a line
// at the top, even one at a fixed YMax, stays clear of the frame. For LogY
// it also sets a log scale, and the range is always positive (plot's log
// scale panics otherwise).
func (c Chart) setYRange(a *plot.Axis) {
	down := func(v float64) float64 { return v - 1 }
	up := func(v float64) float64 { return v + 1 }
	if c.LogY {
		down = func(v float64) float64 { return v / 10 }
		up = func(v float64) float64 { return v * 10 }
		a.Scale = plot.LogScale{}
		a.Tick.Marker = logTicks{}
	}
	lo, hi := a.Min, a.Max
	if c.YMin != nil {
		lo = *c.YMin
	}
	if c.YMax != nil {
		hi = *c.YMax
	}
	switch {
	case math.IsInf(lo, 0) && math.IsInf(hi, 0): // nothing to draw
		lo, hi = 0, 1
		if c.LogY {
			lo, hi = 1, 10
		}
	case math.IsInf(lo, 0):
		lo = down(hi)
	case math.IsInf(hi, 0):
		hi = up(lo)
	}
	if lo >= hi { // one value, or the data all beyond the fixed end
		switch {
		case c.YMin != nil:
			hi = up(lo)
		case c.YMax != nil:
			lo = down(hi)
		default:
			lo, hi = down(lo), up(hi)
		}
	}
	room := headroom
	if c.labelledTop() || len(c.Bars) > 0 {
		room = labelHeadroom
	}
	a.Min, a.Max = pad(lo, hi, room, c.LogY, c.YMin == nil)
	if c.YMax != nil { // the headroom above a fixed top has no tick
		a.Tick.Marker = cappedTicks{a.Tick.Marker, *c.YMax}
	}
}

// cappedTicks is a Ticker without the ticks above max.
type cappedTicks struct {
	plot.Ticker
	max float64
}

// Ticks implements plot.Ticker.
func (t cappedTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, tk := range t.Ticker.Ticks(lo, hi) {
		if tk.Value <= t.max*(1+1e-9) {
			out = append(out, tk)
		}
	}
	return out
}

// headroom is the share of the Y range added above the data (and below it,
// when no YMin fixes the bottom), so that no line runs along the plot's
// edge; labelHeadroom, when a Mark or Span writes its label at the top, so
// that a line at the top of the data passes under the label.
const (
	headroom      = 0.05
	labelHeadroom = 0.1
)

// labelledTop reports whether a Mark or Span writes a label at the top of
// the plot.
func (c Chart) labelledTop() bool {
	for _, m := range c.Marks {
		if m.Label != "" {
			return true
		}
	}
	for _, s := range c.Shade {
		if s.Label != "" {
			return true
		}
	}
	return false
}

// pad widens [lo, hi] by room of its span at the top and, when bottom, by
// headroom at the bottom; on a log axis the span is measured in decades, and an unfixed
// bottom snaps down to a whole decade instead (its tick labelled).
func pad(lo, hi, room float64, logY, bottom bool) (float64, float64) {
	if logY {
		if bottom {
			lo = math.Pow(10, math.Floor(math.Log10(lo)))
		}
		return lo, hi * math.Pow(hi/lo, room)
	}
	span := hi - lo
	if bottom {
		lo -= headroom * span
	}
	return lo, hi + room*span
}

// plainTicks is plot.DefaultTicks with labels printed as short as they go
// ("25", "0.5") rather than with a fixed number of decimals ("25.00"), and
// every tick labelled when there are at most maxLabels of them (DefaultTicks
// labels only a few, e.g. 10, 50 and 90 on a 90 s axis).
type plainTicks struct{}

const maxLabels = 12

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	all := len(ticks) <= maxLabels
	for i, t := range ticks {
		if t.Label != "" || all {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'g', 10, 64)
		}
	}
	return ticks
}

// logTicks marks a log10 axis: a labelled tick at each power of ten and
// unlabelled ones at its multiples; 2x and 5x are labelled too when the
// range spans at most two decades, and every multiple when at most one.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0 && hi > lo) {
		return nil
	}
	first := int(math.Floor(math.Log10(lo)))
	last := int(math.Ceil(math.Log10(hi)))
	if last == first {
		last++
	}
	decades := last - first
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		for m := 1; m <= 9 && (e < last || m == 1); m++ {
			v := float64(m) * math.Pow10(e)
			if e < 0 {
				v = float64(m) / math.Pow10(-e) // 3/10, not 3*0.1, to print "0.3"
			}
			t := plot.Tick{Value: v}
			if m == 1 || decades <= 1 || (decades <= 2 && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// markColor is the stroke of a Mark.
func markColor() color.Color { return color.Gray{Y: 0x30} }

// mark draws one Mark as a dashed full-height line with its label.
type mark struct{ Mark }

// Plot implements plot.Plotter.
func (m mark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.X)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: markColor(), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}},
		x, c.Min.Y, x, c.Max.Y)
	if m.Label != "" {
		sty := text.Style{
			Color:   markColor(),
			Font:    font.From(plot.DefaultFont, vg.Points(9)),
			XAlign:  draw.XRight,
			YAlign:  draw.YTop,
			Handler: p.TextHandler,
		}
		c.FillText(sty, vg.Point{X: x - vg.Points(3), Y: c.Max.Y - vg.Points(3)}, m.Label)
	}
}

// shadeColor is the fill of a Span's band.
func shadeColor() color.Color { return color.Gray{Y: 0xe4} }

// shade draws one Span as a full-height band over the data area.
type shade struct{ Span }

// Plot implements plot.Plotter.
func (s shade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x0 := max(trX(s.From), c.Min.X)
	x1 := min(trX(s.To), c.Max.X)
	if x1 < x0 {
		return
	}
	if x1-x0 < 1 { // keep a zero-width span (an instant) visible
		x1 = x0 + 1
	}
	c.FillPolygon(shadeColor(), []vg.Point{
		{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y},
	})
	if s.Label != "" {
		sty := text.Style{
			Color:   color.Gray{Y: 0x50},
			Font:    font.From(plot.DefaultFont, vg.Points(9)),
			XAlign:  draw.XLeft,
			YAlign:  draw.YTop,
			Handler: p.TextHandler,
		}
		c.FillText(sty, vg.Point{X: x0 + vg.Points(3), Y: c.Max.Y - vg.Points(3)}, s.Label)
	}
}
