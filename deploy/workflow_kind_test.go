package deploy_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const kindWorkflow = ".github/workflows/kind.yml"

// TestWorkflowKind checks the kind workflow: a kind cluster, the image the
// chart names (stampede:local) built and loaded into it, helm install of
// deploy/helm/stampede waiting for every pod and Job, then scripts/smoke.sh
// with a port-forward for each address it checks, the cluster's state and
// logs printed on failure and the cluster deleted always; run for the
// defaults and for deploy/helm/values-scaled.yaml, each with as many API
// port-forwards as its API instances.
func TestWorkflowKind(t *testing.T) {
	root := repoRoot(t)
	_, steps := readWorkflow(t, root, kindWorkflow)
	cluster := findStep(steps, func(s step) bool {
		return strings.HasPrefix(s.Uses, "helm/kind-action@") || runs(s, "kind", "create", "cluster")
	})
	image := findStep(steps, func(s step) bool {
		return runs(s, "docker", "build", "-t", chartImage(t, root)) && runs(s, "kind", "load", "docker-image", chartImage(t, root))
	})
	install := findStep(steps, func(s step) bool {
		return runs(s, "helm", "install", "deploy/helm/stampede", "--wait", "--wait-for-jobs", "${{", "matrix.files", "}}")
	})
	smoke := findStep(steps, func(s step) bool { return runs(s, "bash", "scripts/smoke.sh") })
	logs := findStep(steps, func(s step) bool { return runs(s, "kubectl", "logs") })
	cleanup := findStep(steps, func(s step) bool { return runs(s, "kind", "delete", "cluster") })
	order := []struct {
		what string
		at   int
	}{{"creates a kind cluster", cluster}, {"builds and loads the chart's image", image}, {"runs helm install --wait --wait-for-jobs of the chart with the matrix's values", install},
		{"runs scripts/smoke.sh", smoke}, {"prints kubectl logs", logs}, {"deletes the cluster", cleanup}}
	for i, o := range order {
		if o.at < 0 || (i > 0 && o.at < order[i-1].at) {
			t.Errorf("%s: no step %s after the step that %s", kindWorkflow, o.what, order[max(i-1, 0)].what)
		}
		if o.at >= 0 && i < 4 && steps[o.at].If != "" {
			t.Errorf("%s: the step that %s runs only if %q", kindWorkflow, o.what, steps[o.at].If)
		}
	}
	if logs >= 0 && !strings.Contains(steps[logs].If, "failure()") {
		t.Errorf("%s: the logs step runs if %q, want failure()", kindWorkflow, steps[logs].If)
	}
	if cleanup >= 0 && !strings.Contains(steps[cleanup].If, "always()") {
		t.Errorf("%s: the cluster is deleted if %q, want always()", kindWorkflow, steps[cleanup].If)
	}
	if smoke >= 0 {
		checkPortForwards(t, steps[smoke])
	}
	checkKindMatrix(t, root)
}

// chartImage is the image the chart's values name for the API.
func chartImage(t *testing.T, root string) string {
	t.Helper()
	var v struct {
		Image struct{ Repository, Tag string } `yaml:"image"`
	}
	readYAML(t, filepath.Join(root, "deploy/helm/stampede/values.yaml"), &v)
	return v.Image.Repository + ":" + v.Image.Tag
}

// checkPortForwards: the smoke step forwards every address scripts/smoke.sh
// checks by default to the Service behind it, and each API instance.
func checkPortForwards(t *testing.T, s step) {
	t.Helper()
	for _, svc := range []string{"svc/loadgen 9102:9102", "svc/prometheus 9090:9090", "svc/jaeger 16686:16686", "svc/grafana 3000:3000"} {
		if !runs(s, append([]string{"kubectl", "port-forward"}, strings.Fields(svc)...)...) {
			t.Errorf("%s: the smoke step does not run kubectl port-forward %s", kindWorkflow, svc)
		}
	}
	if !runs(s, "kubectl", "port-forward", `"pod/api-$i"`) || !strings.Contains(s.Run, "matrix.replicas") || !strings.Contains(s.Run, "API_URLS=") {
		t.Errorf("%s: the smoke step does not forward pod api-$i for each of matrix.replicas instances into API_URLS", kindWorkflow)
	}
}

// checkKindMatrix: the matrix runs the defaults and the scaled set, each
// with its API replica count, over values-kind.yaml.
func checkKindMatrix(t *testing.T, root string) {
	t.Helper()
	var wf struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix struct {
					Include []struct {
						Values, Files string
						Replicas      int
					} `yaml:"include"`
				} `yaml:"matrix"`
			} `yaml:"strategy"`
		} `yaml:"jobs"`
	}
	readYAML(t, filepath.Join(root, kindWorkflow), &wf)
	want := map[string]int{}
	for name, file := range map[string]string{"default": "stampede/values.yaml", "scaled": "values-scaled.yaml"} {
		var apiValues struct {
			API struct{ Replicas int } `yaml:"api"`
		}
		readYAML(t, filepath.Join(root, "deploy/helm", file), &apiValues)
		want[name] = apiValues.API.Replicas
	}
	got := map[string]int{}
	for _, j := range wf.Jobs {
		for _, m := range j.Strategy.Matrix.Include {
			files := strings.Fields(m.Files)
			scaled := slices.Contains(files, "deploy/helm/values-scaled.yaml")
			if !slices.Contains(files, "deploy/helm/values-kind.yaml") || scaled != (m.Values == "scaled") {
				t.Errorf("%s: matrix entry %s installs with %q", kindWorkflow, m.Values, m.Files)
			}
			got[m.Values] = m.Replicas
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: matrix API replicas %v, want %v (the value files' api.replicas)", kindWorkflow, got, want)
	}
}
