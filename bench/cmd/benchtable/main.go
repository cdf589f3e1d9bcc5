// Command benchtable reads `go test -bench` output on standard input and
// prints a Markdown table of it: one row per sub-benchmark, grouped by parent
// benchmark and mode (seq or parallel), with the median ns/op, B/op and
// allocs/op over the runs (-count or repeated runs), their spread, the ratio
// to the group's baseline (the `raw`, `mget`, `1node` or `polling`
// sub-benchmark; the median of the run-by-run ratios) and, where the project
// set one, whether the goal is met. Below it, a second table holds the
// metrics benchmarks report of their own (b.ReportMetric, such as the lock
// handoff's latency), with their median, spread and goal. `make bench` feeds
// it every benchmark's output.
//
// Usage:
//
//	go test -run '^$' -bench . -benchmem ./... | go run ./cmd/benchtable [-no-goals]
//
// It fails when the input holds no benchmark result or reports a failure
// (a line starting with FAIL or --- FAIL), so a broken run cannot print a
// table that looks fine.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}
