package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkReport asserts that dir holds summary.json and a report.md that
// shows every chart, and that every chart is a PNG of chart size with data
// drawn on it: at least minLinePixels saturated (coloured, not grey) pixels,
// which an empty plot does not have.
func checkReport(t *testing.T, dir string, charts ...string) {
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
		img := decodePNG(t, filepath.Join(dir, c))
		saturated := 0
		for col, n := range colorCounts(img) {
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
