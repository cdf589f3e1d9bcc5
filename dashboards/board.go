package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// uidPrefix starts every dashboard UID; the rest names the generated file.
const uidPrefix = "stampede-"

// tag is on every stampede dashboard; the dashboard links list the dashboards
// with it.
const tag = "stampede"

// boardSpec is one dashboard: its identity and its rows of panels.
type boardSpec struct {
	uid         string
	title       string
	description string
	tags        []string
	rows        []rowSpec
}

// rowSpec is a row header followed by its panels (an expanded row: Grafana
// keeps an expanded row's panels after it, not inside it).
type rowSpec struct {
	title  string
	panels []panelSpec
}

// boards is every dashboard, in the order All returns them.
func boards() []boardSpec {
	return []boardSpec{overview(), cache(), locks(), api(), loadgen()}
}

// file is the name of the generated JSON file of b: the UID without its prefix.
func (b boardSpec) file() string {
	return strings.TrimPrefix(b.uid, uidPrefix) + ".json"
}

// dashboardURL links to the dashboard uid keeping the time range and the
// variables.
func dashboardURL(uid string) string {
	return "/d/" + uid + "?${__url_time_range}&${__all_variables}"
}

// build turns b into a dashboard.
func (b boardSpec) build() (dashboard.Dashboard, error) {
	d := dashboard.NewDashboardBuilder(b.title).
		Uid(b.uid).
		Description(b.description).
		Tags(append([]string{tag}, b.tags...)).
		Time("now-30m", "now").
		Refresh("10s").
		Timezone("browser").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(datasourceVariable()).
		WithVariable(jobVariable()).
		WithVariable(instanceVariable()).
		Link(dashboard.NewDashboardLinkBuilder("Stampede dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{tag}).
			Icon("external link").
			Tooltip("The other stampede dashboards, with the same time range and variables").
			AsDropdown(false).
			IncludeVars(true).
			KeepTime(true))

	for _, a := range annotations() {
		d.Annotation(a.build())
	}
	id := uint32(1)
	for _, r := range b.rows {
		d.WithRow(dashboard.NewRowBuilder(r.title).Id(id).Collapsed(false))
		id++
		for _, p := range r.panels {
			pb, err := p.build(id)
			if err != nil {
				return dashboard.Dashboard{}, fmt.Errorf("dashboard %s: %w", b.uid, err)
			}
			d.WithPanel(pb)
			id++
		}
	}
	out, err := d.Build()
	if err != nil {
		return dashboard.Dashboard{}, fmt.Errorf("dashboard %s: %w", b.uid, err)
	}
	// The SDK places every link "inControlsMenu" (hidden in the controls
	// dropdown of recent Grafana); leave placement to Grafana's default.
	for i := range out.Links {
		out.Links[i].Placement = nil
	}
	for _, pr := range out.Panels {
		if pr.Panel == nil {
			continue
		}
		for i := range pr.Panel.Links {
			pr.Panel.Links[i].Placement = nil
		}
	}
	return out, nil
}

// datasourceVariable picks the Prometheus data source: ${datasource}.
func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder("datasource").
		Label("Data source").
		Description("The Prometheus that scrapes the stampede services.").
		Type("prometheus").
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: ptr("Prometheus")},
			Value: dashboard.StringOrArrayOfString{String: ptr(defaultDatasourceUID)},
		})
}

// defaultDatasourceUID is the uid of the Prometheus datasource that
// deploy/grafana provisions: the datasource variable's default.
const defaultDatasourceUID = "prometheus"

func ptr[T any](v T) *T { return &v }

// allOption is the "All" selection of a multi-value variable.
func allOption() dashboard.VariableOption {
	t := true
	return dashboard.VariableOption{
		Selected: &t,
		Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
		Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
	}
}

// labelVariable is a multi-value variable over the values of label in query
// (label_values), "All" by default, "All" meaning the regex .+.
func labelVariable(name, label, description, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(datasourceRef()).
		Query(dashboard.StringOrMap{String: &query}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".+").
		Current(allOption())
}

// jobVariable selects Prometheus jobs: "api" (the API instances) and "loadgen".
func jobVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("job", "Job",
		`Prometheus scrape jobs: "api" for the API instances, "loadgen" for the load generator.`,
		"label_values(up, job)")
}

// instanceVariable selects the scraped instances of the selected jobs.
func instanceVariable() *dashboard.QueryVariableBuilder {
	return labelVariable("instance", "Instance",
		"The scraped instances (host:port) of the selected jobs.",
		`label_values(up{job=~"$job"}, instance)`)
}
