package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// run parses the flags in args, reads benchmark output from in and writes
// the table to out.
func run(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(out)
	noGoals := fs.Bool("no-goals", false, "leave out the goal column")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: the benchmark output is read from standard input", fs.Args())
	}
	rep, err := parse(in)
	if err != nil {
		return err
	}
	gs := goals
	if *noGoals {
		gs = nil
	}
	return render(out, rep, gs)
}

// result is one benchmark line: name without the GOMAXPROCS suffix, and its
// measurements by unit ("ns/op", "B/op", "allocs/op", custom ones).
type result struct {
	pkg     string
	name    string
	procs   int
	iters   int64
	metrics map[string]float64
	order   []string // units in the order of the line
}

// units returns the result's own metrics' units (those not in
// standardUnits), in the order of the line.
func (r result) units() []string {
	var us []string
	for _, u := range r.order {
		if !slices.Contains(standardUnits, u) {
			us = append(us, u)
		}
	}
	return us
}

// report is everything parse keeps from a run.
type report struct {
	cpu     string
	results []result
}

// parse reads `go test -bench` output. It keeps benchmark lines and the cpu
// line and ignores everything else, except that a failure anywhere is an
// error.
func parse(r io.Reader) (report, error) {
	var rep report
	var pkg string
	var failures []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimSpace(strings.TrimPrefix(line, "pkg: "))
		case strings.HasPrefix(line, "cpu: "):
			if rep.cpu == "" {
				rep.cpu = strings.TrimSpace(strings.TrimPrefix(line, "cpu: "))
			}
		case strings.HasPrefix(line, "FAIL"), strings.HasPrefix(strings.TrimSpace(line), "--- FAIL"),
			strings.HasPrefix(line, "panic: "):
			failures = append(failures, strings.TrimSpace(line))
		case strings.HasPrefix(line, "Benchmark"):
			if res, ok := parseLine(line); ok {
				res.pkg = pkg
				rep.results = append(rep.results, res)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("read: %w", err)
	}
	if len(failures) > 0 {
		return rep, fmt.Errorf("the benchmark run failed:\n\t%s", strings.Join(failures, "\n\t"))
	}
	if len(rep.results) == 0 {
		return rep, errors.New("no benchmark results in the input (is it `go test -bench` output?)")
	}
	return rep, nil
}

// parseLine parses "BenchmarkX/a/b-2  1000  1234 ns/op  56 B/op  7 allocs/op".
// A line without an iteration count and measurements (a benchmark's name
// printed before its log output) is not a result.
func parseLine(line string) (result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return result{}, false
	}
	iters, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return result{}, false
	}
	res := result{name: f[0], procs: 1, iters: iters, metrics: map[string]float64{}}
	if i := strings.LastIndexByte(res.name, '-'); i > 0 {
		if p, err := strconv.Atoi(res.name[i+1:]); err == nil && p > 0 {
			res.name, res.procs = res.name[:i], p
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return result{}, false
		}
		if _, dup := res.metrics[f[i+1]]; !dup {
			res.order = append(res.order, f[i+1])
		}
		res.metrics[f[i+1]] = v
	}
	if _, ok := res.metrics["ns/op"]; !ok {
		return result{}, false
	}
	return res, true
}

// series is one sub-benchmark over all its runs.
type series struct {
	parent, variant, mode string
	ns, bytes, allocs     []float64
	// extra holds the benchmark's own metrics (b.ReportMetric) by unit;
	// units lists them in order of first appearance.
	extra map[string][]float64
	units []string
}

// standardUnits are the measurements of the main table; every other unit is
// a benchmark's own metric.
var standardUnits = []string{"ns/op", "B/op", "allocs/op", "MB/s"}

// group is a parent benchmark in one mode: the rows compared with each other.
type group struct {
	parent, mode string
	rows         []*series // baseline first, then in order of appearance
}

// baselines name the sub-benchmark that the others in a group are compared
// with: the plain go-redis call (raw, mget), a lock on one server for
// Redlock (1node), a lock without wake-ups for the hot-lock handoff
// (polling).
var baselines = []string{"raw", "mget", "1node", "polling"}

// split turns "BenchmarkGet/cachex/seq" into parent "Get", variant "cachex"
// and mode "seq". The mode is the last element when it is seq or parallel,
// else empty.
func split(name string) (parent, variant, mode string) {
	parts := strings.Split(strings.TrimPrefix(name, "Benchmark"), "/")
	parent = parts[0]
	rest := parts[1:]
	if n := len(rest); n > 0 && (rest[n-1] == "seq" || rest[n-1] == "parallel") {
		mode, rest = rest[n-1], rest[:n-1]
	}
	return parent, strings.Join(rest, "/"), mode
}

// groups collects results into groups, in order of first appearance.
func groups(results []result) []*group {
	var gs []*group
	byKey := map[[2]string]*group{}
	bySeries := map[[3]string]*series{}
	for _, r := range results {
		parent, variant, mode := split(r.name)
		g := byKey[[2]string{parent, mode}]
		if g == nil {
			g = &group{parent: parent, mode: mode}
			byKey[[2]string{parent, mode}] = g
			gs = append(gs, g)
		}
		s := bySeries[[3]string{parent, variant, mode}]
		if s == nil {
			s = &series{parent: parent, variant: variant, mode: mode}
			bySeries[[3]string{parent, variant, mode}] = s
			g.rows = append(g.rows, s)
		}
		s.ns = append(s.ns, r.metrics["ns/op"])
		if v, ok := r.metrics["B/op"]; ok {
			s.bytes = append(s.bytes, v)
		}
		if v, ok := r.metrics["allocs/op"]; ok {
			s.allocs = append(s.allocs, v)
		}
		for _, u := range r.units() {
			if s.extra == nil {
				s.extra = map[string][]float64{}
			}
			if _, seen := s.extra[u]; !seen {
				s.units = append(s.units, u)
			}
			s.extra[u] = append(s.extra[u], r.metrics[u])
		}
	}
	for _, g := range gs {
		slices.SortStableFunc(g.rows, func(a, b *series) int {
			ai, bi := slices.Contains(baselines, a.variant), slices.Contains(baselines, b.variant)
			switch {
			case ai && !bi:
				return -1
			case bi && !ai:
				return 1
			}
			return 0
		})
	}
	return gs
}

// baseline returns the group's baseline row, or nil.
func (g *group) baseline() *series {
	if len(g.rows) > 0 && slices.Contains(baselines, g.rows[0].variant) {
		return g.rows[0]
	}
	return nil
}

// row returns the group's row of a variant, or nil.
func (g *group) row(variant string) *series {
	for _, s := range g.rows {
		if s.variant == variant {
			return s
		}
	}
	return nil
}

// A goal is what the project promises about one sub-benchmark: a ceiling on
// its ratio to the baseline, or to the variant of (max), in every mode or
// in one (mode); a floor on how many times slower it is than another
// variant (slowerThan, atLeast); or, with metric, a ceiling (max) on the
// median of one of its own metrics.
type goal struct {
	parent, variant string
	mode, of        string
	max             float64
	slowerThan      string
	atLeast         float64
	metric          string
}

// goals are the targets of the performance issues; docs/benchmarks.md
// explains them.
var goals = []goal{
	{parent: "Get", variant: "cachex", max: 1.05},
	{parent: "GetJSON", variant: "cachex", max: 1.05},
	{parent: "GetMany", variant: "cachex", max: 1.30},
	{parent: "GetMany", variant: "sequential-gets", slowerThan: "cachex", atLeast: 8},
	{parent: "AcquireRelease", variant: "lockx", max: 1.05},
	{parent: "Redlock", variant: "3nodes", max: 2.5},
	// Auto-pipelined (issue 17): cachex within 1.10x of the raw
	// auto-pipelined read in parallel, and of itself over a plain client
	// when alone; a reused hot-key hit at most a quarter of a plain raw
	// read; lockx no slower than rueidislock; a quorum of three at most 2.5x
	// one server.
	{parent: "GetJSONAutoPipelined", variant: "cachex-ap", of: "raw-ap", max: 1.10},
	{parent: "GetJSONAutoPipelined", variant: "cachex-auto", mode: "parallel", of: "raw-ap", max: 1.10},
	{parent: "GetJSONAutoPipelined", variant: "cachex-auto", mode: "seq", of: "cachex", max: 1.10},
	{parent: "GetJSONAutoPipelined", variant: "cachex-auto-reuse", mode: "parallel", max: 0.25},
	{parent: "PeerAcquireRelease", variant: "lockx-ap", mode: "parallel", of: "rueidislock", max: 1},
	{parent: "PeerAcquireRelease", variant: "lockx-3nodes", of: "lockx", max: 2.5},
	{parent: "PeerAcquireRelease", variant: "lockx-3nodes-ap", of: "lockx-ap", max: 2.5},
	// Near cache (issue 30): a hot hit from process memory, decoded once, at
	// most a twentieth of a plain raw read; a near hit that decodes no
	// dearer than rueidis's client-side cache, which decodes too.
	{parent: "PeerGet", variant: "cachex-near-reuse", max: 0.05},
	{parent: "PeerGet", variant: "cachex-near", of: "rueidis-csc", max: 1},
	// Tracing (issue 18): with the SDK sampling 10% of traces, at most 10%
	// over no provider. (Off against the code before tracing is two builds:
	// docs/benchmarks.md, Tracing.)
	{parent: "GetJSONTraced", variant: "sampled10", max: 1.10},
	// The median hot-lock handoff, in round trips.
	{parent: "Handoff", variant: "lockx", metric: "handoff-p50-rtt", max: 2},
	{parent: "Handoff", variant: "lockx-handover", metric: "handoff-p50-rtt", max: 2},
}

// verdict says whether s in g meets its goals on the ratio to the baseline
// (or to another variant), or "" when it has none. With enough paired runs
// for a confidence interval of the ratio (ratioCI), a goal is met only when
// the whole interval is within it, missed only when all of it is beyond,
// and otherwise not settled; with fewer, the median ratio decides.
func verdict(g *group, s *series, gs []goal) string {
	var out []string
	for _, gl := range gs {
		if gl.parent != g.parent || gl.variant != s.variant || gl.metric != "" || (gl.mode != "" && gl.mode != g.mode) {
			continue
		}
		if gl.slowerThan != "" {
			other := g.row(gl.slowerThan)
			if other == nil {
				continue
			}
			x := ratio(s, other)
			if x >= gl.atLeast {
				out = append(out, fmt.Sprintf("%s ≥ %gx faster: met", gl.slowerThan, gl.atLeast))
			} else {
				out = append(out, fmt.Sprintf("%s ≥ %gx faster: MISSED (%.1fx)", gl.slowerThan, gl.atLeast, x))
			}
			continue
		}
		base, of := g.baseline(), ""
		if gl.of != "" {
			base, of = g.row(gl.of), " "+gl.of
		}
		if base == nil {
			continue
		}
		r := ratio(s, base)
		lo, hi, ok := ratioCI(s, base)
		switch {
		case !ok && r <= gl.max, ok && hi <= gl.max:
			out = append(out, fmt.Sprintf("≤ %.2fx%s: met", gl.max, of))
		case !ok, lo > gl.max:
			out = append(out, fmt.Sprintf("≤ %.2fx%s: MISSED by %.0f%%", gl.max, of, (r/gl.max-1)*100))
		default:
			out = append(out, fmt.Sprintf("≤ %.2fx%s: not settled", gl.max, of))
		}
		if ok {
			out[len(out)-1] += fmt.Sprintf(" (%.2f–%.2f)", lo, hi)
		}
	}
	return strings.Join(out, "; ")
}

// ratioCI returns a confidence interval of at least 95% for the median of
// the run-by-run ratios of s to base: the k-th smallest and k-th largest
// ratio, k the largest for which a median between them has that chance
// (order statistics; binomial with p = 1/2). ok is false when the runs
// cannot be paired or are too few (fewer than 6).
func ratioCI(s, base *series) (lo, hi float64, ok bool) {
	n := len(s.ns)
	if n != len(base.ns) || n < 6 {
		return 0, 0, false
	}
	rs := make([]float64, n)
	for k := range s.ns {
		rs[k] = s.ns[k] / base.ns[k]
	}
	slices.Sort(rs)
	// tail is P(B < k) for B ~ Binomial(n, 1/2).
	k, tail, c := 0, 0.0, 1.0
	for {
		next := tail + c/math.Pow(2, float64(n))
		if 1-2*next < 0.95 {
			break
		}
		tail = next
		k++
		c = c * float64(n-k+1) / float64(k)
	}
	if k == 0 {
		return 0, 0, false
	}
	return rs[k-1], rs[n-k], true
}

// metricVerdict says whether the median of s's metric unit meets its goal,
// or "" when it has none.
func metricVerdict(g *group, s *series, unit string, gs []goal) string {
	for _, gl := range gs {
		if gl.parent != g.parent || gl.variant != s.variant || gl.metric != unit {
			continue
		}
		if m := median(s.extra[unit]); m > gl.max {
			return fmt.Sprintf("≤ %g: MISSED by %.0f%%", gl.max, (m/gl.max-1)*100)
		}
		return fmt.Sprintf("≤ %g: met", gl.max)
	}
	return ""
}

// render writes the table, and below it the table of the benchmarks' own
// metrics when there are any.
func render(w io.Writer, rep report, gs []goal) error {
	bw := bufio.NewWriter(w)
	if rep.cpu != "" {
		fmt.Fprintf(bw, "cpu: %s\n\n", rep.cpu)
	}
	header := "| benchmark | variant | mode | runs | ns/op | ± | B/op | allocs/op | vs baseline |"
	rule := "|---|---|---|---:|---:|---:|---:|---:|---:|"
	if gs != nil {
		header += " goal |"
		rule += "---|"
	}
	fmt.Fprintln(bw, header)
	fmt.Fprintln(bw, rule)
	for _, g := range groups(rep.results) {
		base := g.baseline()
		for _, s := range g.rows {
			vs := ""
			switch {
			case s == base:
				vs = "baseline"
			case base != nil:
				vs = fmt.Sprintf("%.2fx", ratio(s, base))
			}
			if s.variant == "sequential-gets" {
				if c := g.row("cachex"); c != nil {
					vs += fmt.Sprintf(" (%.1fx cachex)", ratio(s, c))
				}
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %d | %s | %s | %s | %s | %s |",
				g.parent, s.variant, g.mode, len(s.ns), number(median(s.ns)), spread(s.ns),
				number(median(s.bytes)), number(median(s.allocs)), vs)
			if gs != nil {
				fmt.Fprintf(bw, " %s |", verdict(g, s, gs))
			}
			fmt.Fprintln(bw)
		}
	}
	renderMetrics(bw, gs, groups(rep.results))
	return bw.Flush()
}

// renderMetrics writes one row per sub-benchmark and metric of its own
// (b.ReportMetric): the median over the runs and its spread.
func renderMetrics(w io.Writer, gs []goal, groups []*group) {
	header := "| benchmark | variant | mode | metric | runs | median | ± |"
	rule := "|---|---|---|---|---:|---:|---:|"
	if gs != nil {
		header += " goal |"
		rule += "---|"
	}
	wrote := false
	for _, g := range groups {
		for _, s := range g.rows {
			for _, u := range s.units {
				if !wrote {
					fmt.Fprintf(w, "\n%s\n%s\n", header, rule)
					wrote = true
				}
				xs := s.extra[u]
				fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s | %s |",
					g.parent, s.variant, g.mode, u, len(xs), metricNumber(median(xs)), spread(xs))
				if gs != nil {
					fmt.Fprintf(w, " %s |", metricVerdict(g, s, u, gs))
				}
				fmt.Fprintln(w)
			}
		}
	}
}

// ratio is how many times longer s takes than base: the median of the
// ratios of their runs taken pairwise (run k of s to run k of base) when both
// ran equally often, else the ratio of their medians. `make bench` runs every
// benchmark once per round, so runs k of two sides ran seconds apart, and
// pairing them cancels most of the drift of a busy machine's load.
func ratio(s, base *series) float64 {
	if len(s.ns) != len(base.ns) {
		return median(s.ns) / median(base.ns)
	}
	rs := make([]float64, len(s.ns))
	for k := range s.ns {
		rs[k] = s.ns[k] / base.ns[k]
	}
	return median(rs)
}

// median of xs; NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is the largest distance of a run from the median, in percent of
// it: how much one run can be trusted. Empty for a single run.
func spread(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	m := median(xs)
	d := 0.0
	for _, x := range xs {
		d = max(d, math.Abs(x-m))
	}
	return fmt.Sprintf("%.0f%%", d/m*100)
}

// metricNumber formats a metric of a benchmark's own: whole numbers with
// thousands separators from 100 up, else three significant digits at most.
func metricNumber(x float64) string {
	switch a := math.Abs(x); {
	case math.IsNaN(x):
		return "-"
	case a >= 100:
		return number(x)
	case a >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// number formats a measurement with thousands separators; "-" when missing.
func number(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	s := strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
