package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// alertsSeries is Prometheus's series of its pending and firing alerts.
const alertsSeries = "ALERTS"

// annotationSpec is an event every dashboard marks on its time axis, from a
// Prometheus query: a mark wherever the query has a value.
type annotationSpec struct {
	name, color, expr, title string
}

// annotations are the demo's story on the time axis of every dashboard.
func annotations() []annotationSpec {
	return []annotationSpec{
		{
			name: "Strategy switches", color: "purple",
			// A strategy that became 1 within the last interval.
			expr: "max by (cache, strategy) (changes(" + sel("cachex_strategy_info") + "[$__rate_interval]) > 0) and on (cache, strategy) " +
				"max by (cache, strategy) (" + sel("cachex_strategy_info") + " == 1)",
			title: "{{cache}} switched to {{strategy}}",
		},
		{
			name: "Stampede bursts", color: "orange",
			expr:  onlyPositive(sumRate("", "loadgen_requests_total", `scenario="stampede"`)),
			title: "load generator: stampede burst on the hot categories",
		},
		{
			// A knob of GET /admin/faults that changed within the interval.
			name: "Fault injection", color: "yellow",
			expr:  "max by (knob) (changes(" + sel("catalog_fault_setting") + "[$__rate_interval]) > 0)",
			title: "fault knob {{knob}} changed (GET /admin/faults)",
		},
		{
			name: "Demo paused", color: "blue",
			expr:  sel("loadgen_demo_paused") + " == 1",
			title: "load generator: demo paused (another experiment runs)",
		},
		{
			// Prometheus's own series of its alerts. Not filtered on job and
			// instance: most rules aggregate those labels away.
			name: "Alerts", color: "red",
			expr:  alertsSeries,
			title: "{{alertname}} {{alertstate}}",
		},
	}
}

// build is a as a dashboard annotation query.
func (a annotationSpec) build() *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name(a.name).
		Datasource(datasourceRef()).
		Enable(true).
		IconColor(a.color).
		Expr(a.expr).
		Step("10s").
		TitleFormat(a.title)
}
