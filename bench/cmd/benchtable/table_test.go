package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// testdata/sample.txt is captured output of `make bench` with -count 2:
// internal/cachex's benchmarks, then the bench module's.

func TestParseSample(t *testing.T) {
	f, err := os.Open("testdata/sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if rep.cpu != "Oxide Virtual Turin-like Processor" {
		t.Errorf("cpu = %q", rep.cpu)
	}
	if len(rep.results) != 38 {
		t.Fatalf("got %d results, want 38", len(rep.results))
	}
	first := rep.results[0]
	if first.name != "BenchmarkGet/raw/seq" || first.procs != 2 || first.iters != 2809 ||
		first.pkg != "github.com/stampede-lab/stampede/internal/cachex" {
		t.Errorf("first result = %+v", first)
	}
	if first.metrics["ns/op"] != 70957 || first.metrics["B/op"] != 1240 || first.metrics["allocs/op"] != 7 {
		t.Errorf("first metrics = %v", first.metrics)
	}
	if last := rep.results[len(rep.results)-1]; last.pkg != "github.com/stampede-lab/stampede/bench/cachebench" {
		t.Errorf("last result's package = %q", last.pkg)
	}

	gs := groups(rep.results)
	var got []string
	for _, g := range gs {
		var vs []string
		for _, s := range g.rows {
			vs = append(vs, s.variant)
		}
		got = append(got, g.parent+"/"+g.mode+": "+strings.Join(vs, ","))
	}
	want := []string{
		"Get/seq: raw,cachex",
		"Get/parallel: raw,cachex",
		"GetJSON/seq: raw,cachex",
		"GetJSON/parallel: raw,cachex",
		"GetMany/: mget,cachex,sequential-gets",
		"PeerGet/seq: raw,cachex,goredis-cache,goredis-cache-json",
		"PeerGet/parallel: raw,cachex,goredis-cache,goredis-cache-json",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := gs[0].row("raw"); median(s.ns) != (70957+45128)/2.0 || len(s.bytes) != 2 {
		t.Errorf("Get/raw/seq series = %+v", s)
	}
}

func TestRenderSample(t *testing.T) {
	in, err := os.ReadFile("testdata/sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"benchtable"}, bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"cpu: Oxide Virtual Turin-like Processor\n",
		"| benchmark | variant | mode | runs | ns/op | ± | B/op | allocs/op | vs baseline | goal |\n",
		// Median of 70957 and 45128; the spread is the largest distance
		// from it (12914.5 of 58042.5).
		"| Get | raw | seq | 2 | 58,043 | 22% | 1,240 | 7 | baseline |  |\n",
		// Ratios pair runs: (68569/70957 + 50845/45128)/2 = 1.0465, whereas
		// the ratio of the medians would be 1.0287.
		"| Get | cachex | seq | 2 | 59,707 | 15% | 3,808 | 17 | 1.05x | ≤ 1.05x: met |\n",
		"| Get | cachex | parallel | 2 | 32,068 | 6% | 3,824 | 18 | 1.16x | ≤ 1.05x: MISSED by 10% |\n",
		"| GetMany | mget |  | 2 | 414,007 | 6% | 109,352 | 306 | baseline |  |\n",
		"| GetMany | cachex |  | 2 | 943,844 | 8% | 348,033 | 733 | 2.30x | ≤ 1.30x: MISSED by 77% |\n",
		"| GetMany | sequential-gets |  | 2 | 3,500,108 | 2% | 124,000 | 700 | 8.47x (3.7x cachex) | cachex ≥ 8x faster: MISSED (3.7x) |\n",
		"| PeerGet | goredis-cache | parallel | 2 | 44,279 | 2% | 3,307 | 40 | 0.92x |  |\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q; table:\n%s", want, out.String())
		}
	}
	// Baselines come first in their group.
	if i, j := strings.Index(out.String(), "| GetMany | mget |"), strings.Index(out.String(), "| GetMany | cachex |"); i < 0 || j < i {
		t.Errorf("mget is not GetMany's first row:\n%s", out.String())
	}
}

func TestRenderWithoutGoals(t *testing.T) {
	in := "BenchmarkGet/raw/seq-2 10 100 ns/op\nBenchmarkGet/cachex/seq-2 10 150 ns/op\n"
	var out bytes.Buffer
	if err := run([]string{"benchtable", "-no-goals"}, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "goal") {
		t.Errorf("-no-goals printed a goal column:\n%s", out.String())
	}
	// Without -benchmem there are no B/op and allocs/op; one run has no spread.
	if want := "| Get | cachex | seq | 1 | 150 |  | - | - | 1.50x |\n"; !strings.Contains(out.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, out.String())
	}
}

func TestRatio(t *testing.T) {
	base := &series{ns: []float64{100, 200, 100}}
	// Paired: 110/100, 200/200, 130/100 -> median 1.1.
	if got := ratio(&series{ns: []float64{110, 200, 130}}, base); got != 1.1 {
		t.Errorf("paired ratio = %v, want 1.1", got)
	}
	// Unequal run counts cannot be paired: ratio of medians, 155/100.
	if got := ratio(&series{ns: []float64{150, 160}}, base); got != 1.55 {
		t.Errorf("unpaired ratio = %v, want 1.55", got)
	}
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line    string
		ok      bool
		name    string
		procs   int
		metrics map[string]float64
	}{
		{"BenchmarkGet/raw/seq-2   \t 100\t  1234 ns/op\t  56 B/op\t 7 allocs/op", true, "BenchmarkGet/raw/seq", 2,
			map[string]float64{"ns/op": 1234, "B/op": 56, "allocs/op": 7}},
		// GOMAXPROCS=1: no suffix; a variant's own dash stays.
		{"BenchmarkGetMany/sequential-gets 3 3443191 ns/op", true, "BenchmarkGetMany/sequential-gets", 1,
			map[string]float64{"ns/op": 3443191}},
		{"BenchmarkX-16 1000000 0.5 ns/op 12.5 MB/s 3.000 hits/op", true, "BenchmarkX", 16,
			map[string]float64{"ns/op": 0.5, "MB/s": 12.5, "hits/op": 3}},
		// A name printed before a benchmark's log lines, and other noise.
		{"BenchmarkGet/raw/seq-2", false, "", 0, nil},
		{"BenchmarkGet/raw/seq-2 \t some log text here", false, "", 0, nil},
		{"BenchmarkGet 10 12 B/op", false, "", 0, nil},
	} {
		res, ok := parseLine(tc.line)
		if ok != tc.ok {
			t.Errorf("parseLine(%q) ok = %v, want %v", tc.line, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if res.name != tc.name || res.procs != tc.procs {
			t.Errorf("parseLine(%q) = %q, procs %d; want %q, %d", tc.line, res.name, res.procs, tc.name, tc.procs)
		}
		for u, v := range tc.metrics {
			if res.metrics[u] != v {
				t.Errorf("parseLine(%q)[%s] = %v, want %v", tc.line, u, res.metrics[u], v)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ name, parent, variant, mode string }{
		{"BenchmarkGet/raw/seq", "Get", "raw", "seq"},
		{"BenchmarkGet/cachex/parallel", "Get", "cachex", "parallel"},
		{"BenchmarkGetMany/sequential-gets", "GetMany", "sequential-gets", ""},
		{"BenchmarkLock/redsync/quorum/seq", "Lock", "redsync/quorum", "seq"},
		{"BenchmarkPlain", "Plain", "", ""},
	} {
		p, v, m := split(tc.name)
		if p != tc.parent || v != tc.variant || m != tc.mode {
			t.Errorf("split(%q) = %q, %q, %q; want %q, %q, %q", tc.name, p, v, m, tc.parent, tc.variant, tc.mode)
		}
	}
}

func TestFailuresAndEmptyInputAreErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"no results":   "goos: linux\nPASS\nok  \tx\t0.1s\n",
		"build failed": "BenchmarkGet/raw/seq-2 10 100 ns/op\nFAIL\tgithub.com/x [build failed]\n",
		"bench failed": "BenchmarkGet/raw/seq-2 10 100 ns/op\n--- FAIL: BenchmarkGet/cachex/seq\n    bench_test.go:1: boom\n",
		"sub failed":   "BenchmarkGet/raw/seq-2 10 100 ns/op\n    --- FAIL: BenchmarkGet/cachex/seq\n",
		"panic":        "BenchmarkGet/raw/seq-2 10 100 ns/op\npanic: runtime error\n",
	} {
		var out bytes.Buffer
		if err := run([]string{"benchtable"}, strings.NewReader(in), &out); err == nil {
			t.Errorf("%s: no error; printed:\n%s", name, out.String())
		}
	}
}

func TestUnexpectedArguments(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"benchtable", "bench.txt"}, strings.NewReader(""), &out); err == nil {
		t.Error("a file argument was accepted; input comes from stdin only")
	}
}

func TestNumber(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 58042.5: "58,043", 3500108: "3,500,108"} {
		if got := number(x); got != want {
			t.Errorf("number(%v) = %q, want %q", x, got, want)
		}
	}
}

// lockRuns is two rounds of the lock benchmarks, shaped as internal/lockx
// prints them: the handoff reports metrics of its own. Its polling baseline
// comes after lockx here, to show that baselines go first whatever the order.
const lockRuns = `pkg: github.com/stampede-lab/stampede/internal/lockx
BenchmarkAcquireRelease/raw/seq-2     1000  100000 ns/op  672 B/op  21 allocs/op
BenchmarkAcquireRelease/lockx/seq-2   1000  110000 ns/op  2856 B/op  58 allocs/op
BenchmarkRedlock/1node/parallel-2     1000  60000 ns/op  2872 B/op  59 allocs/op
BenchmarkRedlock/3nodes/parallel-2    1000  120000 ns/op  7144 B/op  149 allocs/op
BenchmarkHandoff/lockx-2     500  1900000 ns/op  14.9 handoff-p50-hot-rtt  3.04 handoff-p50-rtt  418.5 handoff-p50-us  839.3 handoff-p99-us  28.0 rtt-hot-us  137.9 rtt-idle-us  9210 B/op  207 allocs/op
BenchmarkHandoff/polling-2   300  3800000 ns/op  56.3 handoff-p50-hot-rtt  10.8 handoff-p50-rtt  1587 handoff-p50-us  9912 handoff-p99-us  28.2 rtt-hot-us  146.6 rtt-idle-us  1427 B/op  34 allocs/op
BenchmarkAcquireRelease/raw/seq-2     1000  100000 ns/op  672 B/op  21 allocs/op
BenchmarkAcquireRelease/lockx/seq-2   1000  100000 ns/op  2856 B/op  58 allocs/op
BenchmarkRedlock/1node/parallel-2     1000  60000 ns/op  2872 B/op  59 allocs/op
BenchmarkRedlock/3nodes/parallel-2    1000  180000 ns/op  7144 B/op  149 allocs/op
BenchmarkHandoff/lockx-2     500  1900000 ns/op  14.9 handoff-p50-hot-rtt  1.04 handoff-p50-rtt  418.5 handoff-p50-us  839.3 handoff-p99-us  28.0 rtt-hot-us  137.9 rtt-idle-us  9210 B/op  207 allocs/op
BenchmarkHandoff/polling-2   300  3800000 ns/op  56.3 handoff-p50-hot-rtt  10.8 handoff-p50-rtt  1587 handoff-p50-us  9912 handoff-p99-us  28.2 rtt-hot-us  146.6 rtt-idle-us  1427 B/op  34 allocs/op
`

func TestLockBaselinesGoalsAndMetrics(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"benchtable"}, strings.NewReader(lockRuns), &out); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{
		// Paired ratios: 1.10 and 1.00, median 1.05.
		"| AcquireRelease | lockx | seq | 2 | 105,000 | 5% | 2,856 | 58 | 1.05x | ≤ 1.05x: met |\n",
		"| Redlock | 1node | parallel | 2 | 60,000 | 0% | 2,872 | 59 | baseline |  |\n",
		// Paired ratios 2 and 3: 2.5.
		"| Redlock | 3nodes | parallel | 2 | 150,000 | 20% | 7,144 | 149 | 2.50x | ≤ 2.50x: met |\n",
		"| Handoff | polling |  | 2 | 3,800,000 | 0% | 1,427 | 34 | baseline |  |\n",
		"| Handoff | lockx |  | 2 | 1,900,000 | 0% | 9,210 | 207 | 0.50x |  |\n",
		"| benchmark | variant | mode | metric | runs | median | ± | goal |\n",
		// Median of 3.04 and 1.04 is 2.04: 2% over the goal of 2.
		"| Handoff | lockx |  | handoff-p50-rtt | 2 | 2.04 | 49% | ≤ 2: MISSED by 2% |\n",
		"| Handoff | lockx |  | handoff-p50-us | 2 | 419 | 0% |  |\n",
		"| Handoff | polling |  | handoff-p99-us | 2 | 9,912 | 0% |  |\n",
		"| Handoff | polling |  | rtt-idle-us | 2 | 147 | 0% |  |\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q; table:\n%s", want, table)
		}
	}
	// Metrics keep the order of the benchmark line (go test sorts them).
	if i, j := strings.Index(table, "| Handoff | lockx |  | handoff-p50-hot-rtt |"), strings.Index(table, "| Handoff | lockx |  | rtt-idle-us |"); i < 0 || j < i {
		t.Errorf("metrics out of order:\n%s", table)
	}
	if strings.Contains(table, "| AcquireRelease | raw | seq | ns/op |") {
		t.Errorf("a standard measurement went into the metrics table:\n%s", table)
	}
}

func TestNoMetricsTableWithoutMetrics(t *testing.T) {
	in := "BenchmarkGet/raw/seq-2 10 100 ns/op 5 B/op 1 allocs/op 2.5 MB/s\nBenchmarkGet/cachex/seq-2 10 150 ns/op\n"
	var out bytes.Buffer
	if err := run([]string{"benchtable"}, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "| metric |") {
		t.Errorf("a metrics table without metrics of a benchmark's own:\n%s", out.String())
	}
}

// TestGoalsNeedTheWholeInterval: with ten paired runs a goal is met only
// when the 2nd to 9th of the sorted run-by-run ratios (a 97.9% interval of
// their median) are all within it, missed when all are beyond, and not
// settled otherwise; a goal may compare with a variant other than the
// baseline, in one mode only.
func TestGoalsNeedTheWholeInterval(t *testing.T) {
	var in strings.Builder
	for k := range 10 {
		raw := 100.0
		fmt.Fprintf(&in, "BenchmarkPeerAcquireRelease/rueidislock/parallel-2 10 %g ns/op\n", raw)
		// lockx-ap: ratios 0.90..0.99 (met), lockx-ap in seq has no goal.
		fmt.Fprintf(&in, "BenchmarkPeerAcquireRelease/lockx-ap/parallel-2 10 %g ns/op\n", raw*(0.90+0.01*float64(k)))
		fmt.Fprintf(&in, "BenchmarkPeerAcquireRelease/lockx-ap/seq-2 10 %g ns/op\n", raw*3)
		fmt.Fprintf(&in, "BenchmarkPeerAcquireRelease/rueidislock/seq-2 10 %g ns/op\n", raw)
		// lockx-3nodes-ap over lockx-ap: 2.3..2.75 straddles 2.5 (not settled).
		fmt.Fprintf(&in, "BenchmarkPeerAcquireRelease/lockx-3nodes-ap/parallel-2 10 %g ns/op\n", raw*(0.90+0.01*float64(k))*(2.3+0.05*float64(k)))
	}
	var out bytes.Buffer
	if err := run([]string{"benchtable"}, strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{
		"| ≤ 1.00x rueidislock: met (0.91–0.98) |",
		"| ≤ 2.50x lockx-ap: not settled (2.35–2.70) |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q; table:\n%s", want, table)
		}
	}
	if strings.Contains(table, "| PeerAcquireRelease | lockx-ap | seq | 10 | 300 |  | - | - |  | ≤") {
		t.Errorf("a parallel-only goal judged the seq row:\n%s", table)
	}
	lo, hi, ok := ratioCI(&series{ns: []float64{3, 1, 2, 5, 4}}, &series{ns: []float64{1, 1, 1, 1, 1}})
	if ok {
		t.Errorf("five runs gave an interval %v–%v; want none (fewer than 6 cannot reach 95%%)", lo, hi)
	}
}
