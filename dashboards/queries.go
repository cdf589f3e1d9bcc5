package dashboards

import (
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// PanelQuery is one query of one panel, for tests.
type PanelQuery struct {
	// Dashboard is the dashboard's UID, Panel the panel's title (unique in
	// its dashboard), Expr the PromQL as Grafana sends it (before Substitute).
	Dashboard, Panel, Expr string
	// Needs is "" when the panel has data under normal load, else the fault
	// that makes it non-empty: "redis_down" (the cache's Redis unavailable:
	// stale and bypass serves, Redis errors) or "lost_lock" (a lock lost
	// while held: lockx_lost_total, fenced reservations). A panel that no
	// run of this app can fill is not on a dashboard.
	Needs string
}

// Queries returns every query of every panel of every dashboard, read from
// the built dashboards, in dashboard and panel order.
func Queries() ([]PanelQuery, error) {
	var out []PanelQuery
	for _, b := range boards() {
		needs := map[string]string{}
		for _, r := range b.rows {
			for _, p := range r.panels {
				needs[p.title] = p.needs
			}
		}
		d, err := b.build()
		if err != nil {
			return nil, err
		}
		for _, a := range annotations() {
			out = append(out, PanelQuery{Dashboard: b.uid, Panel: "annotation: " + a.name, Expr: a.expr})
		}
		for _, p := range panels(d) {
			title := ""
			if p.Title != nil {
				title = *p.Title
			}
			for _, t := range p.Targets {
				var expr string
				switch q := t.(type) {
				case prometheus.Dataquery:
					expr = q.Expr
				case *prometheus.Dataquery:
					expr = q.Expr
				default:
					return nil, fmt.Errorf("dashboard %s, panel %q: query of type %T, not Prometheus", b.uid, title, t)
				}
				out = append(out, PanelQuery{Dashboard: b.uid, Panel: title, Expr: expr, Needs: needs[title]})
			}
		}
	}
	return out, nil
}

// panels lists the panels of d, top level and inside rows, rows excluded.
func panels(d dashboard.Dashboard) []dashboard.Panel {
	var out []dashboard.Panel
	for _, pr := range d.Panels {
		if pr.Panel != nil {
			out = append(out, *pr.Panel)
		}
		if pr.RowPanel != nil {
			out = append(out, pr.RowPanel.Panels...)
		}
	}
	return out
}

// substitutions are the Grafana variables the dashboards use and the values
// Substitute gives them. Longer names come first where one prefixes another.
var substitutions = strings.NewReplacer(
	"$__rate_interval", "1m",
	"$__interval", "15s",
	"$__range", "5m",
	"${job}", ".+",
	"$job", ".+",
	"${instance}", ".+",
	"$instance", ".+",
)

// Substitute replaces the Grafana variables of a panel query with values that
// make it plain PromQL: $__rate_interval with 1m, $__interval with 15s,
// $__range with 5m, and $job, ${job}, $instance, ${instance} with .+ (they
// are used in =~ matchers, where .+ means "all").
func Substitute(expr string) string {
	return substitutions.Replace(expr)
}

// promql parses with the default options: the stable functions only.
var promql = parser.NewParser(parser.Options{})

// MetricNames parses Substitute(expr) as PromQL and returns the sorted,
// unique names of the metrics its vector selectors select: the selector's
// name, or its __name__="..." matcher. It fails when expr does not parse or a
// selector matches names by regex, which cannot be listed.
func MetricNames(expr string) ([]string, error) {
	e, err := promql.ParseExpr(Substitute(expr))
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != "" {
			names = append(names, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName {
				continue
			}
			if m.Type != labels.MatchEqual {
				err = fmt.Errorf("selector %s of %q matches metric names by %s: cannot list them", vs, expr, m.Type)
				continue
			}
			names = append(names, m.Value)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
