package chartcheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestAPIPods: the API serves /readyz to readiness and /healthz to liveness
// on its http port, has requests and limits for CPU and memory, and a
// PodDisruptionBudget that leaves at least one instance up.
func TestAPIPods(t *testing.T) {
	forEachSet(t, func(r *release) []error {
		var errs []error
		api := r.workload(t, "api")
		c := api.container(t, "api")
		for _, p := range []struct {
			what  string
			probe *corev1.Probe
			path  string
		}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != "http" {
				errs = append(errs, fmt.Errorf("api %s probe %+v, want GET %s on port http", p.what, p.probe, p.path))
			}
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if c.Resources.Requests.Name(res, "").IsZero() || c.Resources.Limits.Name(res, "").IsZero() {
				errs = append(errs, fmt.Errorf("api: no %s request or limit (%v)", res, c.Resources))
			}
		}
		var covered bool
		for _, pdb := range r.pdbs {
			if pdb.Spec.Selector != nil && selects(pdb.Spec.Selector.MatchLabels, api.pod.Labels) {
				covered = pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() >= 1 && pdb.Spec.MaxUnavailable.IntValue() < api.replicas || api.replicas == 1
			}
		}
		if !covered {
			errs = append(errs, fmt.Errorf("no PodDisruptionBudget lets a drain take API pods while one of %d stays up", api.replicas))
		}
		return errs
	})
}

// TestPodsRunUnprivileged: every pod runs as a non-root user with the
// runtime's seccomp profile and without its service account token, and
// every container without privilege escalation or capabilities, with
// resource requests; the project's containers and the Redis servers on a
// read-only root filesystem. Names and labels are valid Kubernetes names.
func TestPodsRunUnprivileged(t *testing.T) {
	forEachSet(t, func(r *release) []error {
		var errs []error
		for _, w := range r.workloads {
			sc := w.pod.Spec.SecurityContext
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
				sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				errs = append(errs, fmt.Errorf("%s %s: pod security %+v, want runAsNonRoot, a non-zero runAsUser, seccomp RuntimeDefault", w.kind, w.name, sc))
			}
			if a := w.pod.Spec.AutomountServiceAccountToken; a == nil || *a {
				errs = append(errs, fmt.Errorf("%s %s: mounts a service account token it does not use", w.kind, w.name))
			}
			for _, c := range w.allContainers() {
				errs = append(errs, checkContainer(w, c)...)
			}
			for _, msg := range validation.IsDNS1123Subdomain(w.name) {
				errs = append(errs, fmt.Errorf("%s %s: %s", w.kind, w.name, msg))
			}
			for k, v := range w.pod.Labels {
				for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
					errs = append(errs, fmt.Errorf("%s %s label %s=%s: %s", w.kind, w.name, k, v, msg))
				}
			}
		}
		for name := range r.services {
			for _, msg := range validation.IsDNS1035Label(name) {
				errs = append(errs, fmt.Errorf("Service %s: %s", name, msg))
			}
		}
		return errs
	})
}

// checkContainer checks one container's security context and requests.
func checkContainer(w workload, c corev1.Container) []error {
	var errs []error
	where := fmt.Sprintf("%s %s container %s", w.kind, w.name, c.Name)
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 || (sc.Privileged != nil && *sc.Privileged) {
		errs = append(errs, fmt.Errorf("%s: security %+v, want no privilege escalation and every capability dropped", where, sc))
	}
	readOnly := sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	if (strings.HasPrefix(c.Image, `stampede:`) || strings.HasPrefix(c.Image, "redis:")) && !readOnly {
		errs = append(errs, fmt.Errorf("%s: the root filesystem is writable", where))
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		errs = append(errs, fmt.Errorf("%s: no memory request or limit", where))
	}
	for _, p := range c.Ports {
		for _, msg := range validation.IsValidPortName(p.Name) {
			errs = append(errs, fmt.Errorf("%s port %s: %s", where, p.Name, msg))
		}
	}
	return errs
}

// TestChartFilesAreTheRepositorysFiles: everything under the chart's files/
// is a symbolic link into the repository (Helm's loader follows them, and
// render saw their contents), so the chart cannot hold a copy that drifts:
// the alert rules, prometheus.yml, Grafana's provisioning and dashboards and
// Jaeger's configuration are compose's own files.
func TestChartFilesAreTheRepositorysFiles(t *testing.T) {
	want := map[string]string{
		"files/rules/alerts.yml":                 "deploy/rules/alerts.yml",
		"files/prometheus/prometheus.yml":        "deploy/prometheus.yml",
		"files/jaeger/config.yaml":               "deploy/jaeger/compose.yaml",
		"files/dashboards":                       "dashboards/generated",
		"files/grafana/provisioning/datasources": "deploy/grafana/provisioning/datasources",
		"files/grafana/provisioning/dashboards":  "deploy/grafana/provisioning/dashboards",
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(chartDir, "files"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		if d.Type()&fs.ModeSymlink == 0 {
			t.Errorf("%s is a file of its own: link it to the repository's file instead", rel)
			return nil
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return err
		}
		if target, err = filepath.Abs(target); err != nil {
			return err
		}
		if got, _ := filepath.Rel(root, target); got != want[filepath.ToSlash(rel)] {
			t.Errorf("%s links to %s, want %s", rel, got, want[rel])
		}
		seen[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range want {
		if !seen[rel] {
			t.Errorf("%s is missing", rel)
		}
	}
	if _, err := os.Stat(filepath.Join(chartDir, "files/dashboards/overview.json")); err != nil {
		t.Errorf("the dashboards link does not lead to the dashboards: %v", err)
	}
}
