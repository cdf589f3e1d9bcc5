package dashboards

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// contract lists the metrics the services export (docs/metrics.md), but
// lockx_extensions_total: this app runs no watchdog, so no panel shows it. The
// end-to-end test checks the same queries against the real registries.
var (
	contractSeries = []string{
		"cachex_gets_total", "cachex_recomputes_total", "cachex_recomputes_discarded_total",
		"cachex_refresh_lock_contended_total", "cachex_redis_errors_total", "cachex_strategy_info",
		"lockx_acquire_total", "lockx_acquire_attempts_total", "lockx_lost_total",
		"catalog_reservations_total", "catalog_fault_setting", "catalog_hottest_key_recomputes", "http_requests_total",
		"pgxpool_acquired_conns", "pgxpool_idle_conns", "pgxpool_max_conns", "pgxpool_empty_acquire_total",
		"redis_pool_total_conns", "redis_pool_idle_conns", "redis_pool_timeouts_total",
		"loadgen_requests_total", "loadgen_demo_paused",
	}
	contractHistograms = []string{
		"cachex_recompute_duration_seconds", "cachex_refresh_lead_seconds",
		"lockx_acquire_wait_seconds", "lockx_held_seconds",
		"catalog_db_query_duration_seconds", "http_request_duration_seconds",
		"loadgen_request_duration_seconds",
	}
)

// contractName returns the contract metric that name is (a histogram's
// _bucket, _sum and _count count as the histogram), or "".
func contractName(name string) string {
	if name == "up" || name == alertsSeries || slices.Contains(contractSeries, name) {
		return name
	}
	for _, h := range contractHistograms {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if name == h+suffix {
				return h
			}
		}
	}
	return ""
}

func TestQueriesUseContractMetrics(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) == 0 {
		t.Fatal("no queries")
	}
	used := map[string]bool{}
	for _, q := range qs {
		names, err := MetricNames(q.Expr)
		if err != nil {
			t.Errorf("%s / %q: %v", q.Dashboard, q.Panel, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s / %q: %s selects no metric", q.Dashboard, q.Panel, q.Expr)
		}
		for _, n := range names {
			c := contractName(n)
			if c == "" {
				t.Errorf("%s / %q: metric %s is not in the metrics contract", q.Dashboard, q.Panel, n)
			}
			used[c] = true
		}
	}
	for _, m := range append(slices.Clone(contractSeries), contractHistograms...) {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// TestQueriesFilterJobAndInstance checks that every selector of every query
// carries the job and instance variables.
func TestQueriesFilterJobAndInstance(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	p := parser.NewParser(parser.Options{})
	for _, q := range qs {
		if names, _ := MetricNames(q.Expr); slices.Equal(names, []string{alertsSeries}) {
			continue // Prometheus's ALERTS: rules aggregate job and instance away
		}
		if !strings.Contains(q.Expr, `job=~"$job"`) || !strings.Contains(q.Expr, `instance=~"$instance"`) {
			t.Errorf("%s / %q: %s does not filter on $job and $instance", q.Dashboard, q.Panel, q.Expr)
		}
		if strings.Contains(q.Expr, "[") && !strings.Contains(q.Expr, "[$__rate_interval]") && !strings.Contains(q.Expr, "[$__range]") {
			t.Errorf("%s / %q: %s: range windows must be $__rate_interval (or $__range for totals)", q.Dashboard, q.Panel, q.Expr)
		}
		e, err := p.ParseExpr(Substitute(q.Expr))
		if err != nil {
			t.Errorf("%s / %q: %v", q.Dashboard, q.Panel, err)
			continue
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			for _, l := range []string{"job", "instance"} {
				if !hasMatcher(vs.LabelMatchers, l, labels.MatchRegexp, ".+") {
					t.Errorf("%s / %q: selector %s has no %s=~\"$%s\"", q.Dashboard, q.Panel, vs, l, l)
				}
			}
			return nil
		})
	}
}

func hasMatcher(ms []*labels.Matcher, name string, typ labels.MatchType, value string) bool {
	for _, m := range ms {
		if m.Name == name && m.Type == typ && m.Value == value {
			return true
		}
	}
	return false
}

func TestQueriesNeeds(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, q := range qs {
		switch q.Needs {
		case "", needsRedisDown, needsLostLock:
		default:
			t.Errorf("%s / %q: Needs %q is not one of redis_down, lost_lock", q.Dashboard, q.Panel, q.Needs)
		}
		count[q.Needs]++
	}
	for _, n := range []string{"", needsRedisDown, needsLostLock} {
		if count[n] == 0 {
			t.Errorf("no query with Needs %q", n)
		}
	}
	// The descriptions say so too.
	for _, b := range boards() {
		for _, r := range b.rows {
			for _, p := range r.panels {
				if p.needs != "" && !strings.HasPrefix(p.description, "Empty") {
					t.Errorf("%s / %q needs %s but its description does not start by saying when it is empty", b.uid, p.title, p.needs)
				}
			}
		}
	}
}

func TestSubstitute(t *testing.T) {
	in := `rate(x{job=~"$job", instance=~"${instance}", a=~"${job}|$instance"}[$__rate_interval]) + increase(y[$__range]) + z[$__interval]`
	want := `rate(x{job=~".+", instance=~".+", a=~".+|.+"}[1m]) + increase(y[5m]) + z[15s]`
	if got := Substitute(in); got != want {
		t.Errorf("Substitute:\n got %s\nwant %s", got, want)
	}
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum(rate(b_total{job=~"$job"}[$__rate_interval])) / sum(rate(a_total[$__rate_interval]))`, []string{"a_total", "b_total"}},
		{`{__name__="by_name", job=~"$job"} + by_name`, []string{"by_name"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) or vector(0)`, []string{"h_bucket"}},
		{`label_replace(vector(1), "a", "b", "", "")`, nil},
	} {
		got, err := MetricNames(c.expr)
		if err != nil {
			t.Errorf("MetricNames(%s): %v", c.expr, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("MetricNames(%s) = %q, want %q", c.expr, got, c.want)
		}
	}
	for _, bad := range []string{`sum(rate(x[$__rate_interval])`, `{__name__=~"cachex_.+"}`} {
		if _, err := MetricNames(bad); err == nil {
			t.Errorf("MetricNames(%s): no error", bad)
		}
	}
}
