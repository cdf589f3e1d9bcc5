package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	yaml "go.yaml.in/yaml/v3"

	"github.com/stampede-lab/stampede/internal/testenv"
)

const rulesPath = "../../rules/alerts.yml"

// TestDemoReplaySourcesCoverTheRules checks the fixed list against the
// rules: every metric they select is read, keeping every label they match
// on or group by, and pinning only what they pin.
func TestDemoReplaySourcesCoverTheRules(t *testing.T) {
	var doc struct {
		Groups []struct {
			Rules []struct {
				Record, Expr string
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	b, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			recorded[r.Record] = r.Record != ""
		}
	}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatal(err)
			}
			parser.Inspect(e, func(n parser.Node, path []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok || recorded[vs.Name] {
					return nil
				}
				i := slices.IndexFunc(sources, func(s source) bool { return s.metric == vs.Name })
				if i < 0 {
					t.Errorf("the rules read %s, which demoreplay does not", vs.Name)
					return nil
				}
				src := sources[i]
				keeps := func(l string) bool { return src.by == nil || slices.Contains(src.by, l) }
				for _, m := range vs.LabelMatchers {
					if m.Name == "__name__" {
						continue
					}
					if !keeps(m.Name) && !strings.Contains(src.matchers, m.String()) {
						t.Errorf("%s: the rules match %s, which demoreplay neither keeps nor pins", vs.Name, m)
					}
				}
				if src.matchers != "" && !strings.Contains(vs.String(), src.matchers) {
					t.Errorf("%s: demoreplay pins %s, the rules select %s", vs.Name, src.matchers, vs)
				}
				for _, p := range path {
					if a, ok := p.(*parser.AggregateExpr); ok && !a.Without {
						for _, l := range a.Grouping {
							if !keeps(l) {
								t.Errorf("%s: the rules group by %s, which demoreplay sums away", vs.Name, l)
							}
						}
					}
				}
				return nil
			})
		}
	}
}

func TestEncode(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	for _, c := range []struct {
		in   []float64
		want string
	}{
		{[]float64{0, 0, 0, 0}, "0x3"},
		{[]float64{0, 5, 10, 15, 15, 15}, "0+5x3 15 15"},
		{[]float64{nan, nan, 1, 2}, "_x2 1 2"},
		{[]float64{9, 8, 7, nan, 4}, "9-1x2 _ 4"},
		{[]float64{1.5, 3, 4.5}, "1.5+1.5x2"},
	} {
		if got := encode(c.in); got != c.want {
			t.Errorf("encode(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDemoReplay runs the command against a Prometheus started on series
// backfilled with promtool, then runs promtool on what it wrote.
func TestDemoReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; skipped under -short")
	}
	dir := t.TempDir()

	// 10 minutes at 5s: a lock lost at 2m on one of two instances, Redis
	// errors from 5m on (no series before), gets on two instances, and
	// histogram buckets of which only le="1.024" is read.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Minute)
	var om bytes.Buffer
	family := func(name string, series map[string]func(i int) (float64, bool)) {
		fmt.Fprintf(&om, "# TYPE %s gauge\n", name)
		for _, labels := range slices.Sorted(maps.Keys(series)) {
			for i := 0; i <= 120; i++ {
				if v, ok := series[labels](i); ok {
					fmt.Fprintf(&om, "%s{%s} %g %d\n", name, labels, v, t0.Unix()+int64(5*i))
				}
			}
		}
	}
	always := func(f func(i int) float64) func(int) (float64, bool) {
		return func(i int) (float64, bool) { return f(i), true }
	}
	family("lockx_lost_total", map[string]func(int) (float64, bool){
		`job="api",instance="a",name="inventory"`: always(func(i int) float64 { return float64(min(1, i/24)) }),
		`job="api",instance="b",name="inventory"`: always(func(int) float64 { return 0 }),
	})
	family("cachex_gets_total", map[string]func(int) (float64, bool){
		`job="api",instance="a",cache="product",result="hit"`: always(func(i int) float64 { return float64(10 * i) }),
		`job="api",instance="b",cache="product",result="hit"`: always(func(i int) float64 { return float64(5 * i) }),
	})
	family("cachex_redis_errors_total", map[string]func(int) (float64, bool){
		`job="api",instance="a",cache="search",op="get"`: func(i int) (float64, bool) { return float64(5 * (i - 60)), i >= 60 },
	})
	family("http_request_duration_seconds_bucket", map[string]func(int) (float64, bool){
		`job="api",instance="a",route="/v1/search",method="GET",code="200",le="0.256"`: always(func(i int) float64 { return float64(9 * i) }),
		`job="api",instance="a",route="/v1/search",method="GET",code="200",le="1.024"`: always(func(i int) float64 { return float64(10 * i) }),
	})
	om.WriteString("# EOF\n")
	base := testenv.PrometheusFrom(t, om.Bytes())

	out := filepath.Join(dir, "demo_replay_test.yml")
	args := []string{"-prom", base, "-start", t0.UTC().Format(time.RFC3339),
		"-end", t0.Add(10 * time.Minute).UTC().Format(time.RFC3339), "-out", out,
		"-expect", "StampedeLockLost@1m=quiet", "-expect", "StampedeLockLost@3m=firing",
		"-expect", "StampedeCacheRedisErrors@4m=quiet", "-expect", "StampedeCacheRedisErrors@5m30s=pending",
		"-expect", "StampedeCacheRedisErrors@7m=firing"}
	var stdout, stderr bytes.Buffer
	if rc := run(context.Background(), args, &stdout, &stderr); rc != 0 {
		t.Fatalf("run: exit %d\n%s", rc, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Generated by deploy/cmd/demoreplay",
		"-expect 'StampedeCacheRedisErrors@5m30s=pending'",
		"      - series: 'lockx_lost_total{name=\"inventory\"}'\n        values: '0x23 1x96'\n",
		"      - series: 'cachex_gets_total{cache=\"product\",result=\"hit\"}'\n        values: '0+15x120'\n",
		"      - series: 'cachex_redis_errors_total{cache=\"search\"}'\n        values: '_x60 0+5x60'\n",
		"      - series: 'http_request_duration_seconds_bucket{code=\"200\",le=\"1.024\",route=\"/v1/search\"}'\n        values: '0+10x120'\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %q:\n%s", out, want, got)
		}
	}
	if strings.Contains(string(got), "0.256") {
		t.Errorf("%s holds buckets the rules do not read", out)
	}

	// promtool accepts it next to the real rules, and fails a wrong
	// expectation.
	rules, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("promtool", "test", "rules", out).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s\n%s", out, err, b, got)
	}
	args[len(args)-1] = "StampedeCacheRedisErrors@7m=quiet"
	if rc := run(context.Background(), args, &stdout, &stderr); rc != 0 {
		t.Fatalf("run: exit %d\n%s", rc, stderr.String())
	}
	if b, err := exec.Command("promtool", "test", "rules", out).CombinedOutput(); err == nil {
		t.Errorf("promtool passes a wrong expectation (StampedeCacheRedisErrors quiet at 7m):\n%s", b)
	}
}

func TestRunRefusesBadExpectations(t *testing.T) {
	for _, e := range []string{"StampedeLockLost", "StampedeLockLost@1m=maybe", "@1m=quiet", "StampedeLockLost@7s=quiet", "StampedeLockLost@2h=quiet"} {
		var stderr bytes.Buffer
		args := []string{"-prom", "http://127.0.0.1:1", "-start", "2026-01-01T00:00:00Z", "-end", "2026-01-01T00:10:00Z",
			"-out", filepath.Join(t.TempDir(), "x.yml"), "-expect", e}
		if rc := run(context.Background(), args, &stderr, &stderr); rc == 0 || !strings.Contains(stderr.String(), "-expect") {
			t.Errorf("-expect %q: exit %d, %q; want a refusal", e, rc, stderr.String())
		}
	}
}
