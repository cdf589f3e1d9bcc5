package deploy_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	yaml "go.yaml.in/yaml/v3"
)

// replayTestFile is generated from a recorded demo (deploy/cmd/demoreplay):
// long, so it is left out of the quick first pass of each mutant.
const replayTestFile = "demo_replay_test.yml"

// mutant is alerts.yml with one change.
type mutant struct {
	name   string   // rule and change, for the report
	alerts []string // the alerts the change can affect
	rules  []byte   // the mutated alerts.yml
}

// TestMutationsAreKilled applies each mutation of a fixed list to the rules,
// one at a time, and runs the promtool tests of all test files on the
// result: a mutation the tests do not notice (a survivor) means a missing
// test case. The list: drop a rule's "for"; widen each range window 4x;
// drop each label matcher; double and halve each number.
func TestMutationsAreKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool once or twice per mutation; skipped under -short")
	}
	t.Parallel()
	root := repoRoot(t)
	pt := promtool(t)
	start := time.Now()

	src, err := os.ReadFile(filepath.Join(root, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	mutants := mutate(t, src)
	if len(mutants) < 40 {
		t.Fatalf("only %d mutations: the generator lost track of the rules", len(mutants))
	}

	// The test files, split into groups for the quick first pass (most
	// mutants fail there): only the groups that test the affected alerts.
	tmp := t.TempDir()
	testFiles := ruleTestFiles(t, root)
	var names []string
	split := map[string]testFile{}
	for _, f := range testFiles {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		names = append(names, name)
		if name != replayTestFile {
			split[name] = splitGroups(t, name, b)
		}
	}

	// The unmutated rules must pass, or every mutant would look killed.
	if out, err := runRuleTests(pt, filepath.Join(tmp, "baseline"), src, testFiles, root); err != nil {
		t.Fatalf("the unmutated rules fail their tests: %v\n%s", err, out)
	}

	var (
		mu        sync.Mutex
		survivors []string
		quick     int
		wg        sync.WaitGroup
		work      = make(chan int)
	)
	for range runtime.NumCPU() {
		wg.Go(func() {
			for i := range work {
				m := mutants[i]
				dir := filepath.Join(tmp, fmt.Sprint(i))
				killed, fast := killMutant(t, pt, dir, m, split, testFiles, root)
				mu.Lock()
				if !killed {
					survivors = append(survivors, m.name)
				}
				if fast {
					quick++
				}
				mu.Unlock()
			}
		})
	}
	for i := range mutants {
		work <- i
	}
	close(work)
	wg.Wait()

	t.Logf("%d mutations of %s against %v: %d killed (%d by the quick pass), %d survived, in %s",
		len(mutants), rulesFile, names, len(mutants)-len(survivors), quick, len(survivors), time.Since(start).Round(100*time.Millisecond))
	if len(survivors) > 0 {
		slices.Sort(survivors)
		t.Errorf("%d mutations survive the promtool tests (each needs a test case that tells it from the rule):\n%s",
			len(survivors), strings.Join(survivors, "\n"))
	}
}

// killMutant runs the tests on a mutant: first only the groups that test
// the alerts it affects, then, if those pass, every test file. It reports
// whether the tests failed, and whether the first pass was enough.
func killMutant(t *testing.T, pt, dir string, m mutant, tf map[string]testFile, testFiles []string, root string) (killed, fast bool) {
	var quick []string
	for _, name := range slices.Sorted(maps.Keys(tf)) {
		f := tf[name]
		var tests []any
		for i, g := range f.tests {
			if slices.ContainsFunc(m.alerts, func(a string) bool { return slices.Contains(f.alerts[i], a) }) {
				tests = append(tests, g)
			}
		}
		if len(tests) == 0 {
			continue
		}
		b, err := yaml.Marshal(map[string]any{"rule_files": []string{"alerts.yml"}, "evaluation_interval": f.interval, "tests": tests})
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		p := filepath.Join(dir, "quick_"+name)
		if err == nil {
			err = os.WriteFile(p, b, 0o644)
		}
		if err != nil {
			t.Error(err)
			return true, false
		}
		quick = append(quick, p)
	}
	if len(quick) > 0 {
		if out, err := runRuleTests(pt, dir, m.rules, quick, ""); failed(t, m, out, err) {
			return true, true
		}
	}
	out, err := runRuleTests(pt, dir, m.rules, testFiles, root)
	return failed(t, m, out, err), false
}

// failed reports whether promtool ran the tests and some failed; an error
// of any other kind fails the test (it would pass for a killed mutant).
func failed(t *testing.T, m mutant, out []byte, err error) bool {
	if err != nil && !strings.Contains(string(out), "FAILED") {
		t.Errorf("%s: promtool: %v\n%s", m.name, err, out)
	}
	return err != nil
}

// testFile is a promtool test file split into its groups, each with the
// alerts it names (alert_rule_test alertname, or alertname="..." in a
// promql_expr_test).
type testFile struct {
	interval any
	tests    []any
	alerts   [][]string
}

func splitGroups(t *testing.T, name string, b []byte) testFile {
	t.Helper()
	var doc struct {
		EvaluationInterval any   `yaml:"evaluation_interval"`
		Tests              []any `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f := testFile{interval: doc.EvaluationInterval, tests: doc.Tests}
	for _, g := range doc.Tests {
		g, _ := g.(map[string]any)
		var alerts []string
		for _, tc := range asList(g["alert_rule_test"]) {
			if tc, ok := tc.(map[string]any); ok {
				if a, ok := tc["alertname"].(string); ok {
					alerts = append(alerts, a)
				}
			}
		}
		for _, tc := range asList(g["promql_expr_test"]) {
			if tc, ok := tc.(map[string]any); ok {
				expr, _ := tc["expr"].(string)
				if _, rest, ok := strings.Cut(expr, `alertname="`); ok {
					a, _, _ := strings.Cut(rest, `"`)
					alerts = append(alerts, a)
				}
			}
		}
		f.alerts = append(f.alerts, alerts)
	}
	return f
}

func asList(v any) []any { l, _ := v.([]any); return l }

// runRuleTests writes rules as dir/alerts.yml and runs promtool test rules
// on the test files (copied next to it from root when root is set, since
// they load alerts.yml from their own directory).
func runRuleTests(pt, dir string, rules []byte, files []string, root string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o644); err != nil {
		return nil, err
	}
	args := []string{"test", "rules"}
	for _, f := range files {
		if root != "" {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				return nil, err
			}
			f = filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(f, b, 0o644); err != nil {
				return nil, err
			}
		}
		args = append(args, f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pt, args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// mutate returns the mutants of a rule file, in a fixed order.
func mutate(t *testing.T, src []byte) []mutant {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	// The alerts each recorded series feeds.
	rules := func(d map[string]any) [][]any {
		var out [][]any
		for _, g := range asList(d["groups"]) {
			out = append(out, asList(g.(map[string]any)["rules"]))
		}
		return out
	}
	feeds := map[string][]string{}
	for _, g := range rules(doc) {
		for _, r := range g {
			r := r.(map[string]any)
			if a, ok := r["alert"].(string); ok {
				for _, g2 := range rules(doc) {
					for _, r2 := range g2 {
						if rec, ok := r2.(map[string]any)["record"].(string); ok && strings.Contains(r["expr"].(string), rec) {
							feeds[rec] = append(feeds[rec], a)
						}
					}
				}
			}
		}
	}

	var out []mutant
	for gi, g := range rules(doc) {
		for ri, r := range g {
			r := r.(map[string]any)
			name, _ := r["alert"].(string)
			affects := []string{name}
			if name == "" {
				name, _ = r["record"].(string)
				affects = feeds[name]
			}
			expr := r["expr"].(string)
			emit := func(change string, edit func(r map[string]any)) {
				var d map[string]any
				if err := yaml.Unmarshal(src, &d); err != nil {
					t.Fatal(err)
				}
				edit(rules(d)[gi][ri].(map[string]any))
				b, err := yaml.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, mutant{name: name + ": " + change, alerts: affects, rules: b})
			}
			if f, ok := r["for"]; ok {
				emit(fmt.Sprintf("drop for: %v", f), func(r map[string]any) { delete(r, "for") })
			}
			for _, em := range exprMutations(t, name, expr) {
				emit(em.change, func(r map[string]any) { r["expr"] = em.expr })
			}
		}
	}
	return out
}

type exprMutation struct{ change, expr string }

// exprMutations returns the mutations of one PromQL expression: each range
// window x4, each label matcher dropped, each non-zero number doubled and
// halved. Each mutation edits a fresh parse, found by its position in
// parser.Inspect's order.
func exprMutations(t *testing.T, rule, expr string) []exprMutation {
	t.Helper()
	parse := func() parser.Expr {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		return e
	}
	// nodes returns the nodes of a parse in Inspect's order.
	nodes := func(e parser.Expr) []parser.Node {
		var ns []parser.Node
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			ns = append(ns, n)
			return nil
		})
		return ns
	}
	var out []exprMutation
	add := func(change string, e parser.Expr) {
		s := e.String()
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(s); err != nil {
			t.Fatalf("%s: mutation %q gives invalid PromQL %q: %v", rule, change, s, err)
		}
		out = append(out, exprMutation{change, s})
	}
	for i, n := range nodes(parse()) {
		switch n := n.(type) {
		case *parser.MatrixSelector:
			e := parse()
			m := nodes(e)[i].(*parser.MatrixSelector)
			m.Range *= 4
			add(fmt.Sprintf("window x4 of %s", n), e)
		case *parser.VectorSelector:
			for j, lm := range n.LabelMatchers {
				if lm.Name == "__name__" {
					continue
				}
				e := parse()
				vs := nodes(e)[i].(*parser.VectorSelector)
				vs.LabelMatchers = slices.Delete(vs.LabelMatchers, j, j+1)
				add(fmt.Sprintf("drop %s from %s", lm, n), e)
			}
		case *parser.NumberLiteral:
			if n.Val == 0 {
				continue // x2 and /2 leave it as it is
			}
			for _, f := range []float64{2, 0.5} {
				e := parse()
				nodes(e)[i].(*parser.NumberLiteral).Val *= f
				add(fmt.Sprintf("%v x%v", n.Val, f), e)
			}
		}
	}
	return out
}
