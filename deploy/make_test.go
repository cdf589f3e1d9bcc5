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
