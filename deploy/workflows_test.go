package deploy_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	demoWorkflow = ".github/workflows/demo.yml"
	testWorkflow = ".github/workflows/test.yml"
)

// workflow is the part of a GitHub Actions workflow the tests read.
type workflow struct {
	On   any `yaml:"on"`
	Jobs map[string]struct {
		Services map[string]struct {
			Image string            `yaml:"image"`
			Env   map[string]string `yaml:"env"`
			Ports []string          `yaml:"ports"`
		} `yaml:"services"`
		Steps []step `yaml:"steps"`
	} `yaml:"jobs"`
}

// step is one step of a job.
type step struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	If   string            `yaml:"if"`
	With map[string]string `yaml:"with"`
}

// majorPin matches an action pinned to a major version: owner/name@v5.
var majorPin = regexp.MustCompile(`^[\w.-]+/[\w.-]+@v[0-9]+$`)

// readWorkflow reads the workflow at path (from the repository root), checks
// that it runs on push and pull_request with its actions pinned to major
// versions, and returns its one job's steps and the job.
func readWorkflow(t *testing.T, root, path string) (workflow, []step) {
	t.Helper()
	var wf workflow
	readYAML(t, filepath.Join(root, path), &wf)
	var events []string
	switch on := wf.On.(type) {
	case string:
		events = []string{on}
	case []any:
		for _, e := range on {
			if s, ok := e.(string); ok {
				events = append(events, s)
			}
		}
	case map[string]any:
		for e := range on {
			events = append(events, e)
		}
	}
	for _, want := range []string{"push", "pull_request"} {
		if !slices.Contains(events, want) {
			t.Errorf("%s: does not run on %s (on: %v)", path, want, events)
		}
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%s: %d jobs, want one", path, len(wf.Jobs))
	}
	var steps []step
	for _, j := range wf.Jobs {
		steps = j.Steps
	}
	for _, s := range steps {
		if s.Uses != "" && !majorPin.MatchString(s.Uses) {
			t.Errorf("%s: uses %q: pin the action to a major version (owner/name@vN)", path, s.Uses)
		}
	}
	if i := findStep(steps, func(s step) bool { return strings.HasPrefix(s.Uses, "actions/checkout@") }); i != 0 {
		t.Errorf("%s: the first step must be actions/checkout (found at %d)", path, i)
	}
	return wf, steps
}

// findStep returns the index of the first step for which match holds, -1
// if none.
func findStep(steps []step, match func(step) bool) int {
	return slices.IndexFunc(steps, match)
}

// runs reports whether s runs a command line holding every one of words.
func runs(s step, words ...string) bool {
	for line := range strings.Lines(s.Run) {
		f := strings.Fields(line)
		if len(f) > 0 && !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(f, w) }) {
			return true
		}
	}
	return false
}

// TestWorkflowDemo checks the demo workflow: compose up --wait (with a
// build), then scripts/smoke.sh, then compose down -v even when a step
// failed, with the logs printed on failure.
func TestWorkflowDemo(t *testing.T) {
	_, steps := readWorkflow(t, repoRoot(t), demoWorkflow)
	up := findStep(steps, func(s step) bool { return runs(s, "docker", "compose", "up", "--wait", "--build") })
	smoke := findStep(steps, func(s step) bool { return runs(s, "bash", "scripts/smoke.sh") })
	logs := findStep(steps, func(s step) bool { return runs(s, "docker", "compose", "logs") })
	down := findStep(steps, func(s step) bool { return runs(s, "docker", "compose", "down", "-v") })
	switch {
	case up < 0:
		t.Errorf("%s: no step runs docker compose up --build --wait", demoWorkflow)
	case smoke < up:
		t.Errorf("%s: no step runs bash scripts/smoke.sh after compose up", demoWorkflow)
	case down < smoke:
		t.Errorf("%s: no step runs docker compose down -v after the smoke test", demoWorkflow)
	}
	if down >= 0 && !strings.Contains(steps[down].If, "always()") {
		t.Errorf("%s: docker compose down -v runs with if %q, want always() (a failed run must not leave the stack up)", demoWorkflow, steps[down].If)
	}
	if logs < 0 || !strings.Contains(steps[logs].If, "failure()") || (down >= 0 && logs > down) {
		t.Errorf("%s: want a step that prints docker compose logs if: failure(), before compose down", demoWorkflow)
	}
	if up >= 0 && steps[up].If != "" {
		t.Errorf("%s: compose up runs only if %q", demoWorkflow, steps[up].If)
	}
}

// TestWorkflowTest checks the test workflow: Go from go.mod, Postgres (trust
// auth, 5432) and Redis (6379) service containers, redis-server, Prometheus
// and jq installed, then make test.
func TestWorkflowTest(t *testing.T) {
	wf, steps := readWorkflow(t, repoRoot(t), testWorkflow)
	if i := findStep(steps, func(s step) bool { return strings.HasPrefix(s.Uses, "actions/setup-go@") }); i < 0 || steps[i].With["go-version-file"] != "go.mod" {
		t.Errorf("%s: want actions/setup-go with go-version-file: go.mod", testWorkflow)
	}
	install := findStep(steps, func(s step) bool { return runs(s, "apt-get", "install", "redis-server", "prometheus", "jq") })
	test := findStep(steps, func(s step) bool { return runs(s, "make", "test") })
	if jaeger := findStep(steps, func(s step) bool { return runs(s, "make", "jaeger") }); jaeger < 0 || jaeger > test {
		t.Errorf("%s: no step runs make jaeger before make test (the trace tests need the binary)", testWorkflow)
	}
	if install < 0 {
		t.Errorf("%s: no step runs apt-get install redis-server prometheus jq", testWorkflow)
	}
	if test < 0 || test < install {
		t.Errorf("%s: no step runs make test after the install", testWorkflow)
	}
	for _, j := range wf.Jobs {
		pg, ok := j.Services["postgres"]
		if !ok || pg.Env["POSTGRES_HOST_AUTH_METHOD"] != "trust" || !slices.Contains(pg.Ports, "5432:5432") {
			t.Errorf("%s: want a postgres service with POSTGRES_HOST_AUTH_METHOD trust on port 5432:5432, got %+v", testWorkflow, pg)
		}
		if r, ok := j.Services["redis"]; !ok || !slices.Contains(r.Ports, "6379:6379") {
			t.Errorf("%s: want a redis service on port 6379:6379, got %+v", testWorkflow, r)
		}
	}
}
