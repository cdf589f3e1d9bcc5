// Package deploy_test checks the demo's deployment files against each other
// and against the repository: the Prometheus configuration and alert rules
// (with promtool, from Debian's prometheus package), and the compose files
// (with compose-go, as docker compose would load them).
package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	yaml "go.yaml.in/yaml/v3"
)

// variants are the compose files and the Prometheus configuration each must
// mount at /etc/prometheus/prometheus.yml (paths from the repository root).
var variants = []struct{ compose, prometheus string }{
	{"compose.yaml", "deploy/prometheus.yml"},
	{"compose.minimal.yaml", "deploy/prometheus.minimal.yml"},
}

const (
	promConfigPath = "/etc/prometheus/prometheus.yml" // where the prometheus image reads its configuration
	rulesFile      = "deploy/rules/alerts.yml"
	rulesTestFile  = "deploy/rules/alerts_test.yml"
	datasourceFile = "deploy/grafana/provisioning/datasources/prometheus.yml"
	providerFile   = "deploy/grafana/provisioning/dashboards/stampede.yml"
	homeDashUID    = "stampede-overview"
)

// contract is docs/metrics.md's metric table (plus the pool gauges and
// Prometheus's up, with the target label optional that make run-local sets
// on its load generator without DEMO=1): metric name -> its labels. job and instance are added by
// Prometheus to every series, le to histogram buckets.
var contract = map[string][]string{
	"cachex_gets_total":                   {"cache", "result"},
	"cachex_recomputes_total":             {"cache", "reason", "status"},
	"cachex_recomputes_discarded_total":   {"cache"},
	"cachex_recompute_duration_seconds":   {"cache"},
	"cachex_refresh_lead_seconds":         {"cache"},
	"cachex_refresh_lock_contended_total": {"cache"},
	"cachex_redis_errors_total":           {"cache", "op"},
	"cachex_strategy_info":                {"cache", "strategy"},
	"cachex_near_hits_total":              {"client"},
	"cachex_near_misses_total":            {"client"},
	"cachex_near_entries":                 {"client"},
	"cachex_near_bytes":                   {"client"},
	"cachex_near_invalidations_total":     {"client"},
	"lockx_acquire_total":                 {"name", "result"},
	"lockx_acquire_attempts_total":        {"name"},
	"lockx_acquire_wait_seconds":          {"name"},
	"lockx_held_seconds":                  {"name"},
	"lockx_extensions_total":              {"name", "result"},
	"lockx_lost_total":                    {"name"},
	"catalog_reservations_total":          {"result"},
	"catalog_fault_setting":               {"knob"},
	"catalog_db_query_duration_seconds":   {"query"},
	"http_requests_total":                 {"route", "method", "code"},
	"http_request_duration_seconds":       {"route", "method", "code"},
	"pgxpool_acquired_conns":              nil,
	"pgxpool_idle_conns":                  nil,
	"pgxpool_max_conns":                   nil,
	"pgxpool_empty_acquire_total":         nil,
	"redis_pool_total_conns":              nil,
	"redis_pool_idle_conns":               nil,
	"redis_pool_timeouts_total":           nil,
	"loadgen_requests_total":              {"scenario", "endpoint", "code"},
	"loadgen_request_duration_seconds":    {"scenario", "endpoint", "code"},
	"catalog_hottest_key_recomputes":      {"cache"},
	"up":                                  {"optional"}, // make run-local labels its loadgen target optional="true" without DEMO=1
}

// repoRoot is the repository root: go test runs in deploy/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// promtool returns the path of promtool; its absence fails the test, except
// under go test -short.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if testing.Short() {
			t.Skip("promtool not on PATH; skipped under -short")
		}
		t.Fatal("promtool not found on PATH: install Debian's prometheus package (apt-get install -y prometheus), " +
			"or put promtool from a Prometheus release on PATH. (go test -short skips this test.)")
	}
	return p
}

// runPromtool runs promtool in dir and fails the test with its output if it
// exits non-zero.
func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// readYAML decodes the YAML file at path into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// loadProject loads a compose file as docker compose would from the
// repository root: schema validation, interpolation (with an empty
// environment, so the defaults apply) and the consistency checks on.
func loadProject(t *testing.T, root, file string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, file)},
		cli.WithWorkingDirectory(root), cli.WithEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return p
}

// hostPath maps a path inside a service's container to the host path that a
// bind mount puts there.
func hostPath(root string, svc types.ServiceConfig, inContainer string) (string, bool) {
	for _, v := range svc.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		rel, ok := strings.CutPrefix(inContainer, v.Target)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		src := v.Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(root, src)
		}
		return filepath.Join(src, filepath.FromSlash(rel)), true
	}
	return "", false
}

// promConfig is the part of a Prometheus configuration the tests read.
type promConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		StaticConfigs []struct {
			Targets []string          `yaml:"targets"`
			Labels  map[string]string `yaml:"labels"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// TestPrometheusConfig checks each variant's Prometheus configuration with
// promtool. The file names container paths (rule_files), so the test maps
// them through the compose file's bind mounts into a temporary copy: this
// also proves that the mounts put the rule files where the configuration
// looks for them.
func TestPrometheusConfig(t *testing.T) {
	root := repoRoot(t)
	for _, v := range variants {
		t.Run(v.compose, func(t *testing.T) {
			p := loadProject(t, root, v.compose)
			prom, err := p.GetService("prometheus")
			if err != nil {
				t.Fatal(err)
			}
			cfgPath, ok := hostPath(root, prom, promConfigPath)
			if !ok || cfgPath != filepath.Join(root, filepath.FromSlash(v.prometheus)) {
				t.Fatalf("service prometheus must mount %s at %s; it mounts %q there", v.prometheus, promConfigPath, cfgPath)
			}

			var raw map[string]any
			readYAML(t, cfgPath, &raw)
			var cfg promConfig
			readYAML(t, cfgPath, &cfg)
			if len(cfg.RuleFiles) == 0 {
				t.Errorf("%s: no rule_files", v.prometheus)
			}
			var mapped []any
			for _, rf := range cfg.RuleFiles {
				hp, ok := hostPath(root, prom, rf)
				if !ok {
					t.Fatalf("%s: rule file %s is not under any bind mount of service prometheus", v.prometheus, rf)
				}
				if m, _ := filepath.Glob(hp); len(m) == 0 {
					t.Errorf("%s: rule file %s (host %s) matches no file", v.prometheus, rf, hp)
				}
				mapped = append(mapped, hp)
			}
			raw["rule_files"] = mapped
			out, err := yaml.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(t.TempDir(), "prometheus.yml")
			if err := os.WriteFile(tmp, out, 0o644); err != nil {
				t.Fatal(err)
			}
			runPromtool(t, root, "check", "config", tmp)

			// The end-to-end test and the dashboards rely on these job names.
			var jobs []string
			for _, sc := range cfg.ScrapeConfigs {
				jobs = append(jobs, sc.JobName)
			}
			for _, want := range []string{"api", "loadgen"} {
				if !slices.Contains(jobs, want) {
					t.Errorf("%s: no scrape job %q (jobs: %v)", v.prometheus, want, jobs)
				}
			}
		})
	}
}

// TestCompose loads each compose variant and checks it against the
// repository and the other deployment files.
func TestCompose(t *testing.T) {
	root := repoRoot(t)
	// The ports' table moved from the README's live demo to docs/running.md.
	readme, err := os.ReadFile(filepath.Join(root, "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		t.Run(v.compose, func(t *testing.T) {
			p := loadProject(t, root, v.compose)
			names := p.ServiceNames()
			for _, want := range []string{"postgres", "redis-cache", "seed", "api-1", "loadgen", "jaeger", "prometheus", "grafana"} {
				if !slices.Contains(names, want) {
					t.Errorf("no service %q (services: %v)", want, names)
				}
			}

			apis := 0
			for _, name := range names {
				svc := p.Services[name]
				checkMounts(t, root, svc)
				for dep := range svc.DependsOn {
					if !slices.Contains(names, dep) {
						t.Errorf("service %s depends on %s, which is not a service", name, dep)
					}
				}
				for _, port := range svc.Ports {
					re := regexp.MustCompile(`(^|[^0-9])` + regexp.QuoteMeta(port.Published) + `([^0-9]|$)`)
					if port.Published != "" && !re.Match(readme) {
						t.Errorf("docs/running.md does not mention host port %s (published by service %s)", port.Published, name)
					}
				}
				if strings.HasPrefix(name, "api") {
					apis++
					checkAPIService(t, p, svc)
				}
			}
			if apis == 0 {
				t.Error("no api service")
			}

			// Every scrape target is a service.
			prom, err := p.GetService("prometheus")
			if err != nil {
				t.Fatal(err)
			}
			if cfgPath, ok := hostPath(root, prom, promConfigPath); ok {
				var cfg promConfig
				readYAML(t, cfgPath, &cfg)
				for _, sc := range cfg.ScrapeConfigs {
					for _, st := range sc.StaticConfigs {
						for _, target := range st.Targets {
							host, _, err := net.SplitHostPort(target)
							if err != nil || !slices.Contains(names, host) {
								t.Errorf("%s: job %s scrapes %q, which is not a compose service", cfgPath, sc.JobName, target)
							}
						}
					}
				}
			} else {
				t.Errorf("service prometheus mounts nothing at %s", promConfigPath)
			}

			checkGrafana(t, root, p)
		})
	}
}

// checkMounts fails the test unless every bind-mounted host path exists
// inside the repository.
func checkMounts(t *testing.T, root string, svc types.ServiceConfig) {
	t.Helper()
	for _, v := range svc.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		src := v.Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(root, src)
		}
		rel, err := filepath.Rel(root, src)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			t.Errorf("service %s mounts %s, outside the repository", svc.Name, v.Source)
			continue
		}
		if _, err := os.Stat(src); err != nil {
			hint := ""
			if filepath.ToSlash(rel) == "dashboards/generated" {
				hint = " (the generated dashboards: make dashboards writes them)"
			}
			t.Errorf("service %s mounts %s at %s, which does not exist%s", svc.Name, rel, v.Target, hint)
		}
	}
}

// checkAPIService checks an API instance: a readiness healthcheck, and
// starting only once Postgres is healthy and the seed (which migrates) has
// completed.
func checkAPIService(t *testing.T, p *types.Project, svc types.ServiceConfig) {
	t.Helper()
	if hc := svc.HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
		t.Errorf("service %s has no healthcheck", svc.Name)
	} else if !strings.Contains(strings.Join(hc.Test, " "), "/readyz") {
		t.Errorf("service %s: healthcheck %q does not probe /readyz", svc.Name, hc.Test)
	}
	if d, ok := svc.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
		t.Errorf("service %s must depend on postgres with condition %s", svc.Name, types.ServiceConditionHealthy)
	}
	oneShot := false
	for dep, d := range svc.DependsOn {
		s, ok := p.Services[dep]
		if ok && d.Condition == types.ServiceConditionCompletedSuccessfully &&
			len(s.Command) > 0 && (s.Command[0] == "seed" || s.Command[0] == "migrate") {
			oneShot = true
		}
	}
	if !oneShot {
		t.Errorf("service %s must depend on the migrate/seed one-shot with condition %s",
			svc.Name, types.ServiceConditionCompletedSuccessfully)
	}
	// Every Redis it is given (cache and lock) is up before it starts.
	cache, locks := redisHosts(t, svc)
	for _, host := range append(locks, cache) {
		if d, ok := svc.DependsOn[host]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("service %s uses Redis %s and must depend on it with condition %s", svc.Name, host, types.ServiceConditionHealthy)
		}
	}
}

// checkGrafana checks the provisioning against the compose file: the
// datasource points at the prometheus service, the dashboard provider reads
// where dashboards/generated is mounted, and the home dashboard is the
// generated overview.
func checkGrafana(t *testing.T, root string, p *types.Project) {
	t.Helper()
	g, err := p.GetService("grafana")
	if err != nil {
		t.Error(err)
		return
	}
	for _, dir := range []string{"datasources", "dashboards"} {
		hp, ok := hostPath(root, g, "/etc/grafana/provisioning/"+dir)
		if !ok || hp != filepath.Join(root, "deploy/grafana/provisioning", dir) {
			t.Errorf("service grafana must mount deploy/grafana/provisioning/%s at /etc/grafana/provisioning/%s", dir, dir)
		}
	}

	// Every file of the directory is provisioned: the Prometheus datasource
	// (the default) and Jaeger's.
	var defaults []string
	for _, ds := range provisionedDatasources(t, root) {
		if ds.IsDefault {
			defaults = append(defaults, ds.UID)
		}
		if u, err := url.Parse(ds.URL); err != nil || !slices.Contains(p.ServiceNames(), u.Hostname()) {
			t.Errorf("datasource %s: url %q does not name a compose service", ds.UID, ds.URL)
		}
	}
	if !slices.Equal(defaults, []string{"prometheus"}) {
		t.Errorf("deploy/grafana/provisioning/datasources: default datasources %v, want the one with uid prometheus (the dashboards' default)", defaults)
	}

	var prov struct {
		Providers []struct {
			Folder  string `yaml:"folder"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(root, providerFile), &prov)
	generated := filepath.Join(root, "dashboards", "generated")
	for _, pr := range prov.Providers {
		if hp, ok := hostPath(root, g, pr.Options.Path); !ok || hp != generated {
			t.Errorf("%s: provider path %s is not where service grafana mounts dashboards/generated", providerFile, pr.Options.Path)
		}
	}

	home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if home == nil {
		t.Error("service grafana: GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH is not set")
		return
	}
	hp, ok := hostPath(root, g, *home)
	if !ok || filepath.Dir(hp) != generated {
		t.Errorf("service grafana: home dashboard %s is not in the mounted dashboards/generated", *home)
		return
	}
	if _, err := os.Stat(generated); err != nil {
		return // reported by checkMounts
	}
	overview, err := findDashboard(generated, homeDashUID)
	if err != nil {
		t.Error(err)
		return
	}
	if overview != hp {
		t.Errorf("service grafana: home dashboard is %s, but the dashboard with uid %s is dashboards/generated/%s: "+
			"set GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH to %s",
			*home, homeDashUID, filepath.Base(overview), path.Join(path.Dir(*home), filepath.Base(overview)))
	}
}

// findDashboard returns the JSON file in dir whose top-level uid is uid.
func findDashboard(dir, uid string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var d struct {
			UID string `json:"uid"`
		}
		if json.Unmarshal(b, &d) == nil && d.UID == uid {
			return f, nil
		}
	}
	return "", fmt.Errorf("no dashboard with uid %s in %s (%d JSON files)", uid, dir, len(files))
}
