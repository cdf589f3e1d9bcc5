package report_test

import (
	"fmt"
	"math"
	"os"

	"github.com/stampede-lab/stampede/internal/loadgen/report"
)

// A report with one table and one chart; the NaN is a gap in the line.
func ExampleReport_Write() {
	dir, err := os.MkdirTemp("", "report-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	r := report.Report{
		Title:  "Example",
		Tables: []report.Table{{Header: []string{"phase", "p99 ms"}, Rows: [][]string{{"ttl", "333.31"}, {"xfetch:1", "4.43"}}}},
		Charts: []report.Chart{{File: "p99.png", Title: "p99", XLabel: "s", YLabel: "ms",
			Lines: []report.Line{{Name: "p99", X: []float64{1, 2, 3, 4}, Y: []float64{4, 5, math.NaN(), 4}}}}},
	}
	files, err := r.Write(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(files))
	// Output: 2
}
