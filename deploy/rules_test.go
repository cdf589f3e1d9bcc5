package deploy_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

const (
	rulesDir      = "deploy/rules"
	runbooksFile  = "docs/runbooks.md"
	runbookPrefix = "https://github.com/stampede-lab/stampede/blob/main/docs/runbooks.md#"
	dashboardsDir = "dashboards/generated"
)

// promRule is one rule of alerts.yml.
type promRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// loadRules returns the rules of alerts.yml, groups flattened.
func loadRules(t *testing.T, root string) []promRule {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []promRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, filepath.Join(root, rulesFile), &doc)
	var rules []promRule
	for _, g := range doc.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s holds no rule", rulesFile)
	}
	return rules
}

// ruleTestFiles returns the promtool test files of the rules (deploy/rules/
// *_test.yml), relative to the repository root.
func ruleTestFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, rulesDir, "*_test.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool test files in %s (%v)", rulesDir, err)
	}
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	return files
}

// TestAlertRules checks the rules with promtool, runs all their unit tests,
// and checks that every alert is labelled, annotated, tested both ways and
// uses only contract metrics (or series recorded by the rules).
func TestAlertRules(t *testing.T) {
	root := repoRoot(t)
	runPromtool(t, root, "check", "rules", rulesFile)
	testFiles := ruleTestFiles(t, root)
	runPromtool(t, root, append([]string{"test", "rules"}, testFiles...)...)

	fires, silent := map[string]bool{}, map[string]bool{}
	for _, f := range testFiles {
		var tests struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string `yaml:"alertname"`
					ExpAlerts []any  `yaml:"exp_alerts"`
				} `yaml:"alert_rule_test"`
			} `yaml:"tests"`
		}
		readYAML(t, filepath.Join(root, f), &tests)
		for _, tg := range tests.Tests {
			for _, c := range tg.AlertRuleTest {
				if len(c.ExpAlerts) > 0 {
					fires[c.Alertname] = true
				} else {
					silent[c.Alertname] = true
				}
			}
		}
	}

	rules := loadRules(t, root)
	recorded := map[string]bool{}
	for _, r := range rules {
		if r.Record != "" {
			recorded[r.Record] = true
		}
	}
	n := 0
	for _, r := range rules {
		if r.Alert == "" {
			checkContract(t, r.Record, r.Expr, recorded)
			continue
		}
		n++
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity label %q, want warning or critical", r.Alert, s)
		}
		for _, a := range []string{"summary", "description", "runbook_url", "dashboard"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if !fires[r.Alert] {
			t.Errorf("%s: no test case in %v in which it fires", r.Alert, testFiles)
		}
		if !silent[r.Alert] {
			t.Errorf("%s: no test case in %v in which it does not fire", r.Alert, testFiles)
		}
		checkContract(t, r.Alert, r.Expr, recorded)
	}
	if n == 0 {
		t.Fatalf("%s holds no alert", rulesFile)
	}
}

// checkContract fails the test if expr selects a metric, or matches a label,
// that is not in the metric contract; series recorded by the rules
// themselves are allowed (their own expressions are checked).
func checkContract(t *testing.T, rule, expr string, recorded map[string]bool) {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v", rule, err)
		return
	}
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok || recorded[vs.Name] {
			return nil
		}
		name := vs.Name
		labels, ok := contract[name]
		if !ok {
			// Histogram series: the contract names the histogram.
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(name, suffix); cut {
					if labels, ok = contract[base]; ok {
						labels = append(slices.Clone(labels), "le")
						break
					}
				}
			}
		}
		if !ok {
			t.Errorf("%s: metric %q is not in the metric contract (docs/metrics.md)", rule, name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" && m.Name != "job" && m.Name != "instance" && !slices.Contains(labels, m.Name) {
				t.Errorf("%s: %s has no label %q (contract: %v)", rule, name, m.Name, labels)
			}
		}
		return nil
	})
}

// TestRunbookLinks checks every alert's runbook_url and dashboard
// annotations: the runbook anchor is a section of docs/runbooks.md, one
// section per alert and an alert per section; the dashboard path names a
// generated dashboard and one of its panels.
func TestRunbookLinks(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, runbooksFile))
	if err != nil {
		t.Fatal(err)
	}
	anchors, sections := markdownAnchors(string(md))
	panels := dashboardPanels(t, filepath.Join(root, dashboardsDir))

	linked := map[string]string{} // anchor -> alert
	for _, r := range loadRules(t, root) {
		if r.Alert == "" {
			continue
		}
		u := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(u, runbookPrefix)
		switch {
		case !ok || anchor == "":
			t.Errorf("%s: runbook_url %q is not %s<section>", r.Alert, u, runbookPrefix)
		case !anchors[anchor]:
			t.Errorf("%s: runbook_url anchor #%s is no heading of %s", r.Alert, anchor, runbooksFile)
		case linked[anchor] != "":
			t.Errorf("%s: runbook_url #%s is also %s's section; each alert needs its own", r.Alert, anchor, linked[anchor])
		default:
			linked[anchor] = r.Alert
		}
		title, err := checkDashboardLink(r.Annotations["dashboard"], panels)
		if err != nil {
			t.Errorf("%s: dashboard annotation: %v", r.Alert, err)
		} else if !strings.Contains(section(string(md), r.Alert), "*"+title+"*") {
			// A panel id is its position: a layout change moves it.
			t.Errorf("%s: its dashboard link opens panel %q, which its runbook section does not name (*%s*)", r.Alert, title, title)
		}
	}
	for _, s := range sections {
		if linked[s] == "" {
			t.Errorf("%s: section #%s is no alert's runbook_url", runbooksFile, s)
		}
	}
}

var (
	mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N}\p{M}\- _]`)
)

// githubSlug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces to hyphens.
func githubSlug(heading string) string {
	return strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

// markdownAnchors returns the anchors of all headings of a Markdown page
// (duplicates numbered as GitHub does) and those of its sections (level 2
// headings), skipping fenced code.
func markdownAnchors(md string) (all map[string]bool, sections []string) {
	all = map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		slug := githubSlug(m[2])
		if n := seen[slug]; n > 0 {
			seen[slug]++
			slug = fmt.Sprintf("%s-%d", slug, n)
		} else {
			seen[slug] = 1
		}
		all[slug] = true
		if len(m[1]) == 2 {
			sections = append(sections, slug)
		}
	}
	return all, sections
}

// section returns the text of the level 2 section of md headed heading.
func section(md, heading string) string {
	_, rest, ok := strings.Cut(md, "\n## "+heading+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// dashboardPanels returns, for every generated dashboard's uid, its panels'
// titles by id (rows and panels nested in collapsed rows included).
func dashboardPanels(t *testing.T, dir string) map[string]map[int]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s (%v)", dir, err)
	}
	out := map[string]map[int]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		uid, _ := d["uid"].(string)
		ids := map[int]string{}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if id, ok := v["id"].(float64); ok && v["gridPos"] != nil {
					ids[int(id)], _ = v["title"].(string)
				}
				for _, c := range v {
					walk(c)
				}
			case []any:
				for _, c := range v {
					walk(c)
				}
			}
		}
		walk(d["panels"])
		out[uid] = ids
	}
	return out
}

// checkDashboardLink checks a dashboard annotation, /d/<uid>?viewPanel=<id>
// of an existing dashboard and panel, and returns the panel's title.
func checkDashboardLink(link string, panels map[string]map[int]string) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", err
	}
	uid, ok := strings.CutPrefix(u.Path, "/d/")
	if !ok || u.IsAbs() || u.Host != "" || uid == "" || strings.Contains(uid, "/") {
		return "", fmt.Errorf("%q is not /d/<uid>?viewPanel=<panel id>", link)
	}
	ids, ok := panels[uid]
	if !ok {
		return "", fmt.Errorf("%q: no dashboard with uid %s in %s", link, uid, dashboardsDir)
	}
	id, err := strconv.Atoi(u.Query().Get("viewPanel"))
	if err != nil {
		return "", fmt.Errorf("%q: viewPanel is not a panel id", link)
	}
	title, ok := ids[id]
	if !ok {
		return "", fmt.Errorf("%q: dashboard %s has no panel %d", link, uid, id)
	}
	return title, nil
}
