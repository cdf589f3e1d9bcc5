package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMakeVariants checks that the two compose variants can replace each
// other: different project names (so compose.yaml's Postgres, seeded at
// another scale, is never reused by the minimal variant, and the reverse),
// no volume shared between projects, and make up / up-minimal stop the other
// variant (same host ports) before they pull, build and start theirs and
// wait; make down stops both.
func TestMakeVariants(t *testing.T) {
	root := repoRoot(t)
	names := map[string]string{}
	for _, v := range variants {
		p := loadProject(t, root, v.compose)
		if p.Name == "" {
			t.Errorf("%s: no project name", v.compose)
		}
		for other, name := range names {
			if name == p.Name {
				t.Errorf("%s and %s have the same project name %q: the one would reuse the other's containers and volumes", other, v.compose, name)
			}
		}
		names[v.compose] = p.Name
		for name, vol := range p.Volumes {
			if vol.External {
				t.Errorf("%s: volume %s is external: it would be shared by both variants", v.compose, name)
			}
		}
	}

	recipes := makeRecipes(t, filepath.Join(root, "Makefile"))
	targets := map[string]struct{ own, other string }{
		"up":         {"compose.yaml", "compose.minimal.yaml"},
		"up-minimal": {"compose.minimal.yaml", "compose.yaml"},
	}
	for target, files := range targets {
		lines, ok := recipes[target]
		if !ok {
			t.Errorf("Makefile: no target %s", target)
			continue
		}
		stop := composeLine(lines, files.other, "down", "--remove-orphans")
		pull := composeLine(lines, files.own, "pull", "--ignore-buildable")
		build := composeLine(lines, files.own, "build", "--pull")
		up := composeLine(lines, files.own, "up", "-d", "--wait")
		switch {
		case stop < 0:
			t.Errorf("make %s: does not stop the other variant (docker compose -f %s down --remove-orphans)", target, files.other)
		case pull < 0 || build < 0:
			t.Errorf("make %s: does not pull the base images (docker compose -f %s pull --ignore-buildable, then build --pull)", target, files.own)
		case up < 0:
			t.Errorf("make %s: does not start %s (docker compose -f %s up -d --wait)", target, files.own, files.own)
		case !(stop < pull && pull < up && build < up):
			t.Errorf("make %s: want down of %s, then pull and build, then up; got lines %d, %d, %d, %d:\n%s",
				target, files.other, stop, pull, build, up, strings.Join(lines, "\n"))
		}
	}
	for _, v := range variants {
		if composeLine(recipes["down"], v.compose, "down", "-v") < 0 {
			t.Errorf("make down: does not stop %s (docker compose -f %s down -v)", v.compose, v.compose)
		}
	}
}

// makeRecipes returns the recipe lines of each target of the Makefile at
// path.
func makeRecipes(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`^([A-Za-z0-9_-]+):`)
	recipes := map[string][]string{}
	target := ""
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch m := rule.FindStringSubmatch(line); {
		case m != nil:
			target = m[1]
			recipes[target] = nil
		case strings.HasPrefix(line, "\t") && target != "":
			recipes[target] = append(recipes[target], strings.TrimSpace(line))
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		default:
			target = ""
		}
	}
	return recipes
}

// composeLine returns the index of the first line that runs docker compose
// -f file with every word in words after it, -1 if none.
func composeLine(lines []string, file string, words ...string) int {
	return slices.IndexFunc(lines, func(line string) bool {
		f := strings.Fields(line)
		i := slices.Index(f, "-f")
		if len(f) < 4 || f[0] != "docker" || f[1] != "compose" || i < 0 || i+1 >= len(f) || f[i+1] != file {
			return false
		}
		rest := f[i+2:]
		return !slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(rest, w) })
	})
}

// TestMakeJaeger checks how Jaeger is built and wired: make jaeger runs
// tools/jaeger/build.sh into .tools/bin/jaeger, which git ignores, and the
// script builds with GOWORK=off (never the main module's dependencies) and
// the release's own go.mod; make run-local passes JAEGER on to
// scripts/local.sh, whose default binary is that one; .ci/run builds it
// before make test, so that the tests that run Jaeger do not skip on CI.
func TestMakeJaeger(t *testing.T) {
	root := repoRoot(t)
	recipes := makeRecipes(t, filepath.Join(root, "Makefile"))
	if !slices.ContainsFunc(recipes["jaeger"], func(line string) bool {
		return strings.Contains(line, "bash tools/jaeger/build.sh $(abspath $(JAEGER_BIN))")
	}) {
		t.Errorf("make jaeger: no bash tools/jaeger/build.sh $(abspath $(JAEGER_BIN)) in %q", recipes["jaeger"])
	}
	script, err := os.ReadFile(filepath.Join(root, "tools", "jaeger", "build.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"export GOWORK=off", `-C "$src" build`} {
		if !strings.Contains(string(script), want) {
			t.Errorf("tools/jaeger/build.sh lacks %q", want)
		}
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^JAEGER_BIN \??= \.tools/bin/jaeger$`).Match(mk) {
		t.Error("Makefile: JAEGER_BIN is not .tools/bin/jaeger")
	}
	if !slices.ContainsFunc(recipes["run-local"], func(line string) bool {
		return strings.Contains(line, "JAEGER=$(JAEGER)") && strings.Contains(line, "scripts/local.sh start")
	}) {
		t.Errorf("make run-local does not pass JAEGER to scripts/local.sh start: %q", recipes["run-local"])
	}

	local, err := os.ReadFile(filepath.Join(root, "scripts", "local.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(local), "JAEGER_BIN=${JAEGER_BIN:-$root/.tools/bin/jaeger}") {
		t.Error("scripts/local.sh: the default JAEGER_BIN is not $root/.tools/bin/jaeger (make jaeger's)")
	}

	gi, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(gi)), "/.tools/") {
		t.Error(".gitignore does not list /.tools/ (make jaeger's binary)")
	}

	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(string(ci)) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	jaeger, test := slices.Index(lines, "make jaeger"), slices.Index(lines, "make test")
	if jaeger < 0 || test < 0 || jaeger > test {
		t.Errorf(".ci/run: want make jaeger before make test (lines %d and %d)", jaeger, test)
	}
}
