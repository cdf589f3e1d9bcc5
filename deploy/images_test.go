package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exactTag matches a tag that names one release: x.y.z, optionally with a
// v and a variant (16.10-alpine, v3.5.0, 1.26.8-bookworm).
var exactTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$`)

// minorTag matches x.y tags: exact for images whose releases are numbered
// major.minor (minorReleases), floating for the others.
var minorTag = regexp.MustCompile(`^[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$`)

// minorReleases are the images whose releases are major.minor (PostgreSQL
// 10 and later: 16.10 is one release).
var minorReleases = map[string]bool{"postgres": true}

// TestImagesGoVersion checks that the Dockerfile builds with a golang image
// pinned to a full x.y.z no older than go.mod's go line: an older toolchain
// (with GOTOOLCHAIN=local, as in the image) refuses the module.
func TestImagesGoVersion(t *testing.T) {
	root := repoRoot(t)
	if c := compareVersions(t, "1.26.10", "1.26.8"); c <= 0 {
		t.Fatalf("compareVersions(1.26.10, 1.26.8) = %d: versions must compare as numbers", c)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var goLine string
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			goLine = strings.TrimSpace(v)
		}
	}
	if goLine == "" {
		t.Fatal("go.mod has no go line")
	}
	n := 0
	for _, img := range dockerfileImages(t, root) {
		repo, tag := splitImage(img)
		if repo != "golang" {
			continue
		}
		n++
		version, _, _ := strings.Cut(tag, "-")
		if strings.Count(version, ".") != 2 || !exactTag.MatchString(tag) {
			t.Errorf("Dockerfile: FROM %s: want a full x.y.z golang tag (go.mod says go %s)", img, goLine)
			continue
		}
		if compareVersions(t, version, goLine) < 0 {
			t.Errorf("Dockerfile: FROM %s is older than go.mod's go %s", img, goLine)
		}
	}
	if n == 0 {
		t.Error("Dockerfile: no golang build stage")
	}
}

// TestImagesPinned checks that every image the demo and CI pull (the
// Dockerfile's bases, both compose files' images, the test workflow's
// service containers) is pinned to an exact version or a digest, and that
// an image has the same version everywhere.
func TestImagesPinned(t *testing.T) {
	root := repoRoot(t)
	type use struct{ where, tag string }
	uses := map[string][]use{} // repository -> where it is used, with which tag
	add := func(where, img string) {
		repo, tag := splitImage(img)
		exact := exactTag.MatchString(tag) || (minorReleases[repo] && minorTag.MatchString(tag))
		if !strings.Contains(img, "@sha256:") && !exact {
			t.Errorf("%s: image %q is not pinned to an exact version (x.y.z) or digest", where, img)
		}
		uses[repo] = append(uses[repo], use{where, tag})
	}
	for _, img := range dockerfileImages(t, root) {
		add("Dockerfile", img)
	}
	for _, v := range variants {
		p := loadProject(t, root, v.compose)
		for _, name := range p.ServiceNames() {
			svc := p.Services[name]
			if svc.Build != nil {
				continue // built here from the pinned Dockerfile
			}
			if svc.Image == "" {
				t.Errorf("%s: service %s has neither image nor build", v.compose, name)
				continue
			}
			add(v.compose+": service "+name, svc.Image)
		}
	}
	var wf workflow
	readYAML(t, filepath.Join(root, testWorkflow), &wf)
	for jobName, job := range wf.Jobs {
		for name, svc := range job.Services {
			add(fmt.Sprintf("%s: job %s service %s", testWorkflow, jobName, name), svc.Image)
		}
	}
	for repo, us := range uses {
		for _, u := range us[1:] {
			if u.tag != us[0].tag {
				t.Errorf("image %s: %s uses %q, %s uses %q: pin one version everywhere", repo, us[0].where, us[0].tag, u.where, u.tag)
			}
		}
	}
	if len(uses) < 4 {
		t.Errorf("found images of only %d repositories (%v): the test no longer reads the files", len(uses), uses)
	}
}

// dockerfileImages returns the base images of the Dockerfile's FROM lines,
// leaving out scratch and earlier stages.
func dockerfileImages(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]bool{"scratch": true}
	var images []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "--") { // --platform=...
			f = f[1:]
		}
		if !stages[strings.ToLower(f[0])] {
			images = append(images, f[0])
		}
		if len(f) >= 3 && strings.EqualFold(f[1], "AS") {
			stages[strings.ToLower(f[2])] = true
		}
	}
	if len(images) == 0 {
		t.Fatal("Dockerfile: no FROM image")
	}
	return images
}

// splitImage splits an image reference into repository and tag ("" when
// there is none; the digest is left out).
func splitImage(img string) (repo, tag string) {
	img, _, _ = strings.Cut(img, "@")
	if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
		return img[:i], img[i+1:]
	}
	return img, ""
}

// compareVersions compares two dotted versions (x.y or x.y.z) number by
// number; a missing z counts as 0.
func compareVersions(t *testing.T, a, b string) int {
	t.Helper()
	parse := func(s string) [3]int {
		var v [3]int
		parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
		if len(parts) < 2 || len(parts) > 3 {
			t.Fatalf("version %q: want x.y or x.y.z", s)
		}
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("version %q: %v", s, err)
			}
			v[i] = n
		}
		return v
	}
	va, vb := parse(a), parse(b)
	for i := range va {
		if va[i] != vb[i] {
			if va[i] < vb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
