package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLocalPrometheusConfig checks the configuration make run-local gives
// Prometheus (scripts/local.sh prometheus-config): promtool accepts it, every
// job scrapes only the local stack's addresses, the rule file is the
// checkout's, and the load generator's target is labelled optional (left
// out of StampedeTargetDown) without DEMO=1 and not with it.
func TestLocalPrometheusConfig(t *testing.T) {
	for _, demo := range []string{"", "1"} {
		t.Run("DEMO="+demo, func(t *testing.T) { checkLocalPrometheusConfig(t, demo) })
	}
}

func checkLocalPrometheusConfig(t *testing.T, demo string) {
	root := repoRoot(t)
	cmd := exec.Command("bash", filepath.Join("scripts", "local.sh"), "prometheus-config")
	cmd.Env = append(os.Environ(), "DEMO="+demo, "HTTP_ADDR=127.0.0.1:8080", "LOADGEN_ADDR=127.0.0.1:9102")
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("local.sh prometheus-config: %v\n%s", err, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, root, "check", "config", path)

	var cfg promConfig
	readYAML(t, path, &cfg)
	want := map[string][]string{"api": {"127.0.0.1:8080"}, "loadgen": {"127.0.0.1:9102"}}
	for _, sc := range cfg.ScrapeConfigs {
		var got []string
		for _, st := range sc.StaticConfigs {
			got = append(got, st.Targets...)
		}
		if !slices.Equal(got, want[sc.JobName]) {
			t.Errorf("job %s scrapes %v, want %v", sc.JobName, got, want[sc.JobName])
		}
		for _, st := range sc.StaticConfigs {
			wantOptional := sc.JobName == "loadgen" && demo != "1"
			if got := st.Labels["optional"] == "true"; got != wantOptional {
				t.Errorf("job %s: labels %v, want optional=%v", sc.JobName, st.Labels, wantOptional)
			}
		}
		delete(want, sc.JobName)
	}
	if len(want) != 0 {
		t.Errorf("jobs missing: %v", want)
	}
	if rules := filepath.Join(root, rulesFile); !slices.Equal(cfg.RuleFiles, []string{rules}) {
		t.Errorf("rule_files = %v, want [%s]", cfg.RuleFiles, rules)
	}
}
