package report

import (
	"image/color"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-lab/stampede/internal/loadgen/report/reporttest"
)

// latencyChart is a log-scale latency chart with two lines and an outage.
func latencyChart() Chart {
	var x, p50, p99 []float64
	for i := range 60 {
		s := float64(i)
		x = append(x, s)
		v50, v99 := 2.0, 8.0
		if i >= 20 && i < 30 { // the stampede
			v50, v99 = 40, 900
		}
		p50 = append(p50, v50)
		p99 = append(p99, v99)
	}
	return Chart{
		File:   "latency.png",
		Title:  "Latency (ms)",
		XLabel: "seconds",
		YLabel: "ms",
		LogY:   true,
		Lines:  []Line{{Name: "p50", X: x, Y: p50}, {Name: "p99", X: x, Y: p99}},
		Shade:  []Span{{From: 20, To: 30, Label: "key expiry"}},
	}
}

// hitRatioChart is a 0..1 chart whose line has a NaN gap.
func hitRatioChart() Chart {
	var x, y []float64
	for i := range 60 {
		x = append(x, float64(i))
		v := 0.95
		if i >= 25 && i < 35 {
			v = math.NaN() // no requests: no ratio
		}
		y = append(y, v)
	}
	return Chart{
		File:   "hit_ratio.png",
		Title:  "Cache hit ratio",
		XLabel: "seconds",
		Lines:  []Line{{Name: "hit ratio", X: x, Y: y}},
		YMin:   ptr(float64(0)),
		YMax:   ptr(float64(1)),
	}
}

func TestReportWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report") // Write creates it
	r := Report{
		Title: "Stampede run",
		Intro: "Three strategies against 4 hot keys.",
		Tables: []Table{{
			Title:  "Phases",
			Header: []string{"phase", "requests", "p99", "recomputes"},
			Rows: [][]string{
				{"ttl", "12,000", "912.5 ms", "480"},
				{"xfetch:1", "12,000", "9.1 ms", "-"},
				{"lock|wait", "11,998", "10 ms"}, // short row, pipe in a cell
			},
			Note: "Recomputes are database reads.",
		}},
		Charts: []Chart{latencyChart(), hitRatioChart()},
		Notes:  []string{"Run on a laptop.", "Second note."},
	}
	paths, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "latency.png"),
		filepath.Join(dir, "hit_ratio.png"),
		filepath.Join(dir, "report.md"),
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %v, want %v", paths, want)
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"# Stampede run\n\nThree strategies against 4 hot keys.\n",
		"## Phases\n\n| phase | requests | p99 | recomputes |\n| --- | ---: | ---: | ---: |\n",
		"| ttl | 12,000 | 912.5 ms | 480 |\n",
		"| xfetch:1 | 12,000 | 9.1 ms | - |\n",
		`| lock\|wait | 11,998 | 10 ms |  |` + "\n\nRecomputes are database reads.\n",
		"![Latency (ms)](latency.png)",
		"![Cache hit ratio](hit_ratio.png)",
		"- Run on a laptop.\n- Second note.\n",
	} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q:\n%s", s, md)
		}
	}
	if strings.Index(string(md), "## Phases") > strings.Index(string(md), "![") {
		t.Errorf("tables should come before charts:\n%s", md)
	}

	shade := color.RGBAModel.Convert(shadeColor()).(color.RGBA)
	for _, tc := range []struct {
		file  string
		lines int
	}{{"latency.png", 2}, {"hit_ratio.png", 1}} {
		img := reporttest.DecodePNG(t, filepath.Join(dir, tc.file))
		counts := reporttest.ColorCounts(img)
		if len(counts) < 4 {
			t.Errorf("%s has %d colours, want a real chart", tc.file, len(counts))
		}
		for i := range tc.lines {
			if n := counts[chartColors[i]]; n < 50 {
				t.Errorf("%s: %d pixels of line %d's colour %v, want at least 50", tc.file, n, i, chartColors[i])
			}
		}
		if n := counts[chartColors[tc.lines]]; n != 0 {
			t.Errorf("%s: %d pixels of the unused colour %v", tc.file, n, chartColors[tc.lines])
		}
		if tc.file == "latency.png" && counts[shade] < 1000 {
			t.Errorf("%s: %d shaded pixels, want the span's band", tc.file, counts[shade])
		}
	}
}

func TestReportRejectsBadInput(t *testing.T) {
	good := hitRatioChart()
	withFile := func(name string) Chart { c := good; c.File = name; return c }
	for name, r := range map[string]Report{
		"empty file":         {Charts: []Chart{withFile("")}},
		"no extension":       {Charts: []Chart{withFile("latency")}},
		"other extension":    {Charts: []Chart{withFile("latency.svg")}},
		"upper-case .PNG":    {Charts: []Chart{withFile("latency.PNG")}},
		"only extension":     {Charts: []Chart{withFile(".png")}},
		"directory":          {Charts: []Chart{withFile("charts/latency.png")}},
		"parent":             {Charts: []Chart{withFile("../latency.png")}},
		"absolute":           {Charts: []Chart{withFile("/tmp/latency.png")}},
		"backslash":          {Charts: []Chart{withFile(`charts\latency.png`)}},
		"space":              {Charts: []Chart{withFile("my latency.png")}},
		"duplicate":          {Charts: []Chart{good, good}},
		"mismatched lengths": {Charts: []Chart{{File: "x.png", Lines: []Line{{X: []float64{1, 2}, Y: []float64{1}}}}}},
		"table no header":    {Tables: []Table{{Rows: [][]string{{"a"}}}}},
		"table long row":     {Tables: []Table{{Header: []string{"a"}, Rows: [][]string{{"1", "2"}}}}},
	} {
		dir := filepath.Join(t.TempDir(), "report")
		paths, err := r.Write(dir)
		if err == nil {
			t.Errorf("%s: Write succeeded, want an error", name)
			continue
		}
		if len(paths) != 0 {
			t.Errorf("%s: Write returned paths %v with error %v", name, paths, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s: Write created %s before failing (stat: %v)", name, dir, err)
		}
	}

	_, err := Report{Charts: []Chart{withFile("a/b.png")}}.Write(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `"a/b.png"`) || !strings.Contains(err.Error(), "plain file name") {
		t.Errorf("error %v should name the file and say what is wanted", err)
	}
}

func TestReportEmptyChart(t *testing.T) {
	dir := t.TempDir()
	r := Report{Title: "Nothing", Charts: []Chart{{File: "empty.png", Title: "No data", LogY: true}}}
	if _, err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	reporttest.DecodePNG(t, filepath.Join(dir, "empty.png"))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Nothing\n\n## Charts\n\n![No data](empty.png)\n"; string(md) != want {
		t.Errorf("report.md = %q, want %q", md, want)
	}
}

func TestReportTableAlignment(t *testing.T) {
	tbl := Table{
		Header: []string{"name", "n", "ratio", "blank", "mixed"},
		Rows: [][]string{
			{"a", "1", "99.5%", "", "1"},
			{"b\nc", "-2.5e3", "1.8x", "-", "many"},
		},
	}
	var b strings.Builder
	tbl.write(&b)
	want := "| name | n | ratio | blank | mixed |\n" +
		"| --- | ---: | ---: | --- | --- |\n" +
		"| a | 1 | 99.5% |  | 1 |\n" +
		"| b c | -2.5e3 | 1.8x | - | many |\n\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
