// Package reporttest holds the checks the report tests of several packages
// share: a PNG chart has the chart's size and data drawn on it, and a report
// directory shows every chart.
package reporttest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DecodePNG reads a PNG and fails t unless it has at least the chart size.
func DecodePNG(t testing.TB, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
		t.Fatalf("%s is %dx%d, want at least 600x300", path, b.Dx(), b.Dy())
	}
	return img
}

// ColorCounts counts the pixels of each colour of img.
func ColorCounts(img image.Image) map[color.RGBA]int {
	counts := make(map[color.RGBA]int)
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	return counts
}

// CheckReport asserts that dir holds summary.json and a report.md that
// shows every chart, and that every chart is a PNG of chart size with data
// drawn on it: at least minLinePixels saturated (coloured, not grey) pixels,
// which an empty plot does not have.
func CheckReport(t testing.TB, dir string, charts ...string) {
	t.Helper()
	const minLinePixels = 150
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Error(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if !strings.Contains(string(md), "("+c+")") {
			t.Errorf("report.md does not show %s", c)
		}
		img := DecodePNG(t, filepath.Join(dir, c))
		saturated := 0
		for col, n := range ColorCounts(img) {
			lo, hi := min(col.R, col.G, col.B), max(col.R, col.G, col.B)
			if hi-lo > 60 {
				saturated += n
			}
		}
		if saturated < minLinePixels {
			t.Errorf("%s: %d coloured pixels, want >= %d (no data drawn?)", c, saturated, minLinePixels)
		}
	}
}
