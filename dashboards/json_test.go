package dashboards

import (
	"encoding/json"
	"strings"
	"testing"
)

// dashboardJSON is a generated dashboard decoded generically, to check the
// JSON Grafana reads rather than the Go values.
type dashboardJSON = map[string]any

func decodeAll(t *testing.T) map[string]dashboardJSON {
	t.Helper()
	gen, err := All()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dashboardJSON{}
	for _, g := range gen {
		var d dashboardJSON
		if err := json.Unmarshal(g.JSON, &d); err != nil {
			t.Fatalf("%s: %v", g.File, err)
		}
		out[g.UID] = d
	}
	return out
}

// jsonPanels returns every panel of d, those inside rows included, rows
// themselves excluded, and the rows.
func jsonPanels(d dashboardJSON) (panels, rows []map[string]any) {
	var walk func(list []any)
	walk = func(list []any) {
		for _, x := range list {
			p, _ := x.(map[string]any)
			if p["type"] == "row" {
				rows = append(rows, p)
				sub, _ := p["panels"].([]any)
				walk(sub)
				continue
			}
			panels = append(panels, p)
		}
	}
	list, _ := d["panels"].([]any)
	walk(list)
	return panels, rows
}

// path follows keys through nested objects.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestPanelsComplete(t *testing.T) {
	for uid, d := range decodeAll(t) {
		panels, rows := jsonPanels(d)
		if len(panels) == 0 {
			t.Errorf("%s: no panels", uid)
		}
		ids := map[float64]bool{}
		titles := map[string]bool{}
		for _, r := range rows {
			if r["collapsed"] != true && len(r["panels"].([]any)) > 0 {
				t.Errorf("%s: expanded row %v holds panels: Grafana drops them", uid, r["title"])
			}
			id, _ := r["id"].(float64)
			ids[id] = true
		}
		for _, p := range panels {
			title, _ := p["title"].(string)
			where := uid + " / " + title
			if title == "" || titles[title] {
				t.Errorf("%s: empty or duplicate panel title", where)
			}
			titles[title] = true
			id, _ := p["id"].(float64)
			if id == 0 || ids[id] {
				t.Errorf("%s: missing or duplicate panel id %v", where, p["id"])
			}
			ids[id] = true
			if p["type"] == "text" { // words, no query
				if c, _ := path(p, "options", "content").(string); len(strings.Fields(c)) < 50 {
					t.Errorf("%s: a text panel with %d words", where, len(strings.Fields(c)))
				}
				continue
			}
			if got := path(p, "datasource", "uid"); got != "${datasource}" {
				t.Errorf("%s: datasource uid %v, want ${datasource}", where, got)
			}
			if got := path(p, "datasource", "type"); got != "prometheus" {
				t.Errorf("%s: datasource type %v, want prometheus", where, got)
			}
			if u, _ := path(p, "fieldConfig", "defaults", "unit").(string); u == "" {
				t.Errorf("%s: no unit", where)
			}
			if desc, _ := p["description"].(string); len(strings.Fields(desc)) < 12 {
				t.Errorf("%s: description %q is too short to help a newcomer", where, desc)
			}
			steps, _ := path(p, "fieldConfig", "defaults", "thresholds", "steps").([]any)
			if len(steps) == 0 {
				t.Errorf("%s: no thresholds", where)
			} else if path(steps[0], "value") != nil {
				t.Errorf("%s: the first threshold step must be the base (value null)", where)
			}
			targets, _ := p["targets"].([]any)
			if len(targets) == 0 {
				t.Errorf("%s: no queries", where)
			}
			refs := map[string]bool{}
			for _, q := range targets {
				if got := path(q, "datasource", "uid"); got != "${datasource}" {
					t.Errorf("%s: query datasource uid %v, want ${datasource}", where, got)
				}
				ref, _ := path(q, "refId").(string)
				if ref == "" || refs[ref] {
					t.Errorf("%s: empty or duplicate refId %q", where, ref)
				}
				refs[ref] = true
				if e, _ := path(q, "expr").(string); e == "" {
					t.Errorf("%s: query %s has no expr", where, ref)
				}
			}
			x, _ := path(p, "gridPos", "x").(float64)
			w, _ := path(p, "gridPos", "w").(float64)
			h, _ := path(p, "gridPos", "h").(float64)
			if w == 0 || h == 0 || x+w > 24 {
				t.Errorf("%s: gridPos %v does not fit the 24-column grid", where, p["gridPos"])
			}
		}
	}
}

func TestDashboardsVariablesAndUIDs(t *testing.T) {
	gen, err := All()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"stampede-overview", "stampede-cache", "stampede-locks", "stampede-api", "stampede-loadgen"}
	if len(gen) != len(want) {
		t.Fatalf("%d dashboards, want %d", len(gen), len(want))
	}
	uids, files := map[string]bool{}, map[string]bool{}
	for i, g := range gen {
		if g.UID != want[i] {
			t.Errorf("dashboard %d: UID %s, want %s", i, g.UID, want[i])
		}
		if uids[g.UID] || files[g.File] {
			t.Errorf("duplicate UID %s or file %s", g.UID, g.File)
		}
		uids[g.UID], files[g.File] = true, true
		if g.File != strings.TrimPrefix(g.UID, "stampede-")+".json" {
			t.Errorf("%s: file %s", g.UID, g.File)
		}
	}
	for uid, d := range decodeAll(t) {
		if d["uid"] != uid {
			t.Errorf("%s: JSON uid %v", uid, d["uid"])
		}
		if title, _ := d["title"].(string); title == "" {
			t.Errorf("%s: no title", uid)
		}
		vars := map[string]map[string]any{}
		list, _ := path(d, "templating", "list").([]any)
		for _, v := range list {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			vars[name] = m
		}
		ds := vars["datasource"]
		if ds == nil || ds["type"] != "datasource" || ds["query"] != "prometheus" {
			t.Errorf("%s: no datasource variable of type prometheus: %v", uid, ds)
		} else if got := path(ds, "current", "value"); got != "prometheus" {
			t.Errorf("%s: datasource variable defaults to %v, want the provisioned uid prometheus", uid, got)
		}
		for name, query := range map[string]string{
			"job":      "label_values(up, job)",
			"instance": `label_values(up{job=~"$job"}, instance)`,
		} {
			v := vars[name]
			if v == nil {
				t.Errorf("%s: no %s variable", uid, name)
				continue
			}
			if v["type"] != "query" || v["query"] != query || v["multi"] != true || v["includeAll"] != true {
				t.Errorf("%s: variable %s: type %v query %v multi %v includeAll %v", uid, name, v["type"], v["query"], v["multi"], v["includeAll"])
			}
			if path(v, "datasource", "uid") != "${datasource}" {
				t.Errorf("%s: variable %s does not query ${datasource}", uid, name)
			}
			if cur, _ := path(v, "current", "value").([]any); len(cur) != 1 || cur[0] != "$__all" {
				t.Errorf("%s: variable %s defaults to %v, want All", uid, name, path(v, "current", "value"))
			}
		}
		links, _ := d["links"].([]any)
		if len(links) == 0 || path(links[0], "type") != "dashboards" {
			t.Errorf("%s: no link to the other stampede dashboards", uid)
		}
	}
}

// TestExemplars checks the generated JSON: every time series query over a
// histogram the API records exemplars on (docs/metrics.md) asks for them, so
// that its points link to their traces in Jaeger, and no other query does
// (other panels cannot draw them, other metrics have none). Each of those
// histograms has at least one such query.
func TestExemplars(t *testing.T) {
	histograms := []string{"http_request_duration_seconds", "cachex_recompute_duration_seconds", "lockx_acquire_wait_seconds"}
	seen := map[string]int{}
	for uid, d := range decodeAll(t) {
		panels, _ := jsonPanels(d)
		for _, p := range panels {
			targets, _ := p["targets"].([]any)
			for _, q := range targets {
				expr, _ := path(q, "expr").(string)
				hist := ""
				for _, h := range histograms {
					if strings.Contains(expr, h+"_bucket{") {
						hist = h
					}
				}
				want := hist != "" && p["type"] == "timeseries" && path(q, "instant") != true
				if got := path(q, "exemplar") == true; got != want {
					t.Errorf("%s / %v / %v: exemplar %v, want %v (%s)", uid, p["title"], path(q, "refId"), got, want, expr)
				}
				if want {
					seen[hist]++
				}
			}
		}
	}
	for _, h := range histograms {
		if seen[h] == 0 {
			t.Errorf("no time series query over %s asks for exemplars", h)
		}
	}
}
