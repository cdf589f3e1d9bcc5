package dashboards

import (
	"fmt"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/text"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The faults a panel can need before it shows data (panelSpec.needs).
const (
	needsRedisDown = "redis_down" // cache Redis unavailable: stale/bypass serves, Redis errors
	needsLostLock  = "lost_lock"  // a lock lost while held: lockx_lost_total, fenced reservations
)

// kind is the visualization of a panel.
type kind int

const (
	kindTimeseries kind = iota
	kindStat
	kindHeatmap
	kindTable
	kindStateTimeline // states named by valueNames
	kindText          // markdown in content; no query
)

// target is one PromQL query of a panel.
type target struct {
	expr   string
	legend string
}

// panelSpec is everything stampede says about one panel; build turns it into
// a foundation-SDK panel builder.
type panelSpec struct {
	kind        kind
	title       string
	description string
	unit        string
	thresholds  []step
	targets     []target
	// needs is "" when the panel has data under normal load, else the fault
	// (needsRedisDown, ...) without which it stays empty.
	needs string
	w, h  uint32
	// percent01 pins the axis to 0..1 (ratios shown as percentunit).
	percent01 bool
	// instant makes the queries instant (stats over $__range, tables).
	instant bool
	// noValue is shown instead of "No data".
	noValue string
	// valueNames names a state timeline's values ("0" -> "none", ...) and
	// valueColors colours them.
	valueNames, valueColors map[string]string
	// content is a text panel's markdown.
	content string
	// rightAxis lists refIds whose series go on the right axis.
	rightAxis []string
	// showThresholds draws the thresholds as dashed lines on a time series.
	showThresholds bool
	// link is the URL of a panel link ("" for none); linkTitle its text.
	link, linkTitle string
}

// datasourceRef is what every panel and query points at: the dashboard's
// datasource variable.
func datasourceRef() common.DataSourceRef {
	typ, uid := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// panelBuilder is the part of the SDK's generated panel builders
// (timeseries, stat, heatmap, table, ...) that every panel uses.
type panelBuilder[B any] interface {
	cog.Builder[dashboard.Panel]
	Id(id uint32) B
	Title(title string) B
	Description(description string) B
	Datasource(datasource common.DataSourceRef) B
	Unit(unit string) B
	Thresholds(thresholds cog.Builder[dashboard.ThresholdsConfig]) B
	Height(h uint32) B
	Span(w uint32) B
	Min(min float64) B
	Max(max float64) B
	NoValue(noValue string) B
	Links(links []cog.Builder[dashboard.DashboardLink]) B
	WithTarget(target cog.Builder[variants.Dataquery]) B
	OverrideByQuery(queryRefId string, properties []dashboard.DynamicConfigValue) B
}

// configure applies the settings every panel shares.
func configure[B panelBuilder[B]](b B, id uint32, p panelSpec) B {
	b.Id(id).
		Title(p.title).
		Description(p.description).
		Datasource(datasourceRef()).
		Unit(p.unit).
		Thresholds(thresholdsBuilder(p.thresholds)).
		Span(p.w).
		Height(p.h)
	if p.percent01 {
		b.Min(0).Max(1)
	}
	if p.noValue != "" {
		b.NoValue(p.noValue)
	}
	if p.link != "" {
		b.Links([]cog.Builder[dashboard.DashboardLink]{
			dashboard.NewDashboardLinkBuilder(p.linkTitle).
				Type(dashboard.DashboardLinkTypeLink).
				Url(p.link),
		})
	}
	for i, t := range p.targets {
		b.WithTarget(query(refID(i), t, p))
	}
	for _, ref := range p.rightAxis {
		b.OverrideByQuery(ref, []dashboard.DynamicConfigValue{
			{Id: "custom.axisPlacement", Value: "right"},
		})
	}
	return b
}

// refID names the i-th query of a panel: A, B, C, ...
func refID(i int) string { return string(rune('A' + i)) }

// exemplarHistograms are the histograms the API records exemplars on (a
// trace_id per bucket, from the sampled request that fell in it: OpenMetrics
// scrapes, Prometheus --enable-feature=exemplar-storage). A time series
// query over one of them asks Grafana for its exemplars, which link to the
// trace in Jaeger (the Prometheus datasource's exemplarTraceIdDestinations).
var exemplarHistograms = []string{
	"http_request_duration_seconds_bucket",
	"cachex_recompute_duration_seconds_bucket",
	"lockx_acquire_wait_seconds_bucket",
}

// wantsExemplars reports whether a query of panel p with expression expr
// shows exemplars: a range query of a time series panel that selects one of
// exemplarHistograms. Other panels cannot draw them, other metrics have none.
func wantsExemplars(p panelSpec, expr string) bool {
	if p.kind != kindTimeseries || p.instant {
		return false
	}
	names, err := MetricNames(expr)
	if err != nil {
		return false // the query tests report the expression
	}
	return slices.ContainsFunc(names, func(n string) bool { return slices.Contains(exemplarHistograms, n) })
}

func query(ref string, t target, p panelSpec) *prometheus.DataqueryBuilder {
	q := prometheus.NewDataqueryBuilder().
		RefId(ref).
		Datasource(datasourceRef()).
		Expr(t.expr).
		LegendFormat(t.legend).
		EditorMode(prometheus.QueryEditorModeCode)
	if wantsExemplars(p, t.expr) {
		q.Exemplar(true)
	}
	switch {
	case p.kind == kindHeatmap:
		q.Format(prometheus.PromQueryFormatHeatmap).Range()
	case p.kind == kindTable:
		q.Format(prometheus.PromQueryFormatTable).Instant()
	case p.instant:
		q.Instant()
	default:
		q.Range()
	}
	return q
}

// build returns the SDK builder for p, with panel id id.
func (p panelSpec) build(id uint32) (cog.Builder[dashboard.Panel], error) {
	switch p.kind {
	case kindTimeseries:
		return timeseriesPanel(id, p), nil
	case kindStat:
		return statPanel(id, p), nil
	case kindHeatmap:
		return heatmapPanel(id, p), nil
	case kindTable:
		return tablePanel(id, p), nil
	case kindStateTimeline:
		return stateTimelinePanel(id, p), nil
	case kindText:
		return text.NewPanelBuilder().Id(id).Title(p.title).Description(p.description).
			Height(p.h).Span(p.w).Mode(text.TextModeMarkdown).Content(p.content), nil
	}
	return nil, fmt.Errorf("panel %q: unknown kind %d", p.title, p.kind)
}

func timeseriesPanel(id uint32, p panelSpec) *timeseries.PanelBuilder {
	b := configure(timeseries.NewPanelBuilder(), id, p).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdPaletteClassic)).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			ShowLegend(true).
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	if p.showThresholds {
		b.ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().
			Mode(common.GraphThresholdsStyleModeDashed))
	}
	return b
}

func statPanel(id uint32, p panelSpec) *stat.PanelBuilder {
	graph := common.BigValueGraphModeArea
	if p.instant {
		graph = common.BigValueGraphModeNone
	}
	return configure(stat.NewPanelBuilder(), id, p).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		ColorMode(common.BigValueColorModeValue).
		GraphMode(graph).
		TextMode(common.BigValueTextModeValue).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().
			Calcs([]string{"lastNotNull"}).
			Values(false))
}

func heatmapPanel(id uint32, p panelSpec) *heatmap.PanelBuilder {
	return configure(heatmap.NewPanelBuilder(), id, p).
		Calculate(false).
		RowsFrame(heatmap.NewRowsHeatmapOptionsBuilder().Layout(common.HeatmapCellLayoutLe)).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s")).
		CellValues(heatmap.NewCellValuesBuilder().Unit(p.unit)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Fill("dark-orange").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().
			Mode(common.TooltipDisplayModeSingle).
			YHistogram(true).
			ShowColorScale(true)).
		ShowLegend()
}

func tablePanel(id uint32, p panelSpec) *table.PanelBuilder {
	return configure(table.NewPanelBuilder(), id, p).
		ShowHeader(true).
		// The SDK's default footer has a null reducer, which its own strict
		// decoder rejects; Grafana's default is ["sum"].
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}).CountRows(false)).
		WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "__name__": true, "job": true},
				"renameByName":  map[string]string{"Value": "instances"},
			},
		})
}

func stateTimelinePanel(id uint32, p panelSpec) *statetimeline.PanelBuilder {
	options := map[string]dashboard.ValueMappingResult{}
	for v, name := range p.valueNames {
		color := p.valueColors[v]
		options[v] = dashboard.ValueMappingResult{Text: &name, Color: &color}
	}
	return configure(statetimeline.NewPanelBuilder(), id, p).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)).
		Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: options}}}).
		ShowValue(common.VisibilityModeAuto).
		MergeValues(true).
		RowHeight(0.8)
}
