package scenario

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
)

// The teaching pages: docs/primer.md, a page a team lead hands out, and the
// README, which a newcomer reads first. These tests hold them to their
// length, their links, the committed reports they quote and the commands
// they show.

const repoRoot = "../../.."

// words counts the words of a Markdown text as wc -w does.
func words(text string) int { return len(strings.Fields(text)) }

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	mdLink  = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?)\s*$`)
	// absPath is a path outside the repository written into the text: a
	// reader's machine is not the author's.
	absPath = regexp.MustCompile("(?:^|[\\s`(\"'])(?:~/|/(?:tmp|home|work|root|usr|etc|var|opt|Users)/)")
	// makeTarget is a make command in the text, as `make target`.
	makeTarget = regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
)

// slug is GitHub's anchor of a Markdown heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '’':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkLinks: every relative link or image of doc (a path from the
// repository's root) names a file or directory inside the repository, and
// an anchor into a Markdown page names one of its headings. With inside,
// the text names no path outside the repository either.
func checkLinks(t *testing.T, doc, text string, inside bool) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			continue
		}
		path, anchor, _ := strings.Cut(target, "#")
		file := filepath.Join(root, filepath.Dir(doc), path)
		if path == "" {
			file = filepath.Join(root, doc)
		}
		if rel, err := filepath.Rel(root, file); err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(path) {
			t.Errorf("%s links %s, outside the repository", doc, target)
			continue
		}
		if _, err := os.Stat(file); err != nil {
			t.Errorf("%s links %s, which does not exist", doc, target)
			continue
		}
		if anchor == "" || !strings.HasSuffix(file, ".md") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range heading.FindAllStringSubmatch(string(b), -1) {
			found = found || slug(h[1]) == anchor
		}
		if !found {
			t.Errorf("%s links %s: no heading of %s has the anchor #%s", doc, target, path, anchor)
		}
	}
	for _, m := range absPath.FindAllString(text, -1) {
		if !inside {
			break
		}
		t.Errorf("%s names a path outside the repository: %q", doc, strings.TrimSpace(m))
	}
}

// reportDirs finds the committed report directories a paragraph cites: a
// link to an experiment's page (its busy report) or to a file of an
// experiment's or a benchmark's report directory.
var reportDirs = regexp.MustCompile(`(?:^|[(\s])((?:docs/)?(?:experiments/(?:quiet/)?\d\d-[a-z-]+|benchmarks/[a-z0-9-]+))(?:\.md|/)`)

// checkQuotes: every number of a paragraph or list item of doc that cites
// committed reports occurs in one of those report.md files. It returns how
// many paragraphs it checked.
func checkQuotes(t *testing.T, doc, text string) int {
	t.Helper()
	checked := 0
	for _, u := range readmeUnits(text) {
		cited := map[string]bool{}
		for _, m := range reportDirs.FindAllStringSubmatch(u, -1) {
			cited[filepath.Join(filepath.Dir(doc), m[1])] = true
		}
		if len(cited) == 0 {
			continue
		}
		have := map[string]bool{}
		for dir := range cited {
			for n := range numbers(readDoc(t, filepath.Join(dir, "report.md"))) {
				have[n] = true
			}
		}
		for n := range numbers(linkTarget.ReplaceAllString(u, "]")) {
			if !have[n] {
				t.Errorf("%s quotes %s, which the report.md it cites (%v) does not hold:\n%s", doc, n, cited, u)
			}
		}
		checked++
	}
	return checked
}

// shCommands returns the commands of the sh blocks of text: a trailing
// backslash continues a line, a comment ends it.
func shCommands(text string) []string {
	var out []string
	blocks := strings.Split(text, "```sh\n")
	for _, b := range blocks[1:] {
		b, _, _ = strings.Cut(b, "\n```")
		for _, line := range strings.Split(strings.ReplaceAll(b, "\\\n", " "), "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.Join(strings.Fields(line), " "); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// makeTargets returns the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(readDoc(t, "Makefile"), -1) {
		out[m[1]] = true
	}
	return out
}

// documentedLoadgen returns the loadgen commands of the experiments' pages,
// which TestExperimentCommandsParse parses and make experiments runs, with
// their whitespace made single.
func documentedLoadgen(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for doc := range experimentDocs(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range shCommands(string(b)) {
			if strings.HasPrefix(c, "go run ./cmd/loadgen ") {
				out[c] = true
			}
		}
	}
	return out
}

// checkCommands: every command doc shows is one the repository runs as
// written: a make target of the Makefile, the compose demo, the line that
// loads .run/env, a loadgen command of an experiment's page (whose flags
// parse), or go test -run on a package that has tests of that pattern.
func checkCommands(t *testing.T, doc, text string) int {
	t.Helper()
	targets := makeTargets(t)
	loadgen := documentedLoadgen(t)
	goTest := regexp.MustCompile(`^go test -run (\S+) (?:-v )?(\./\S+)$`)
	n := 0
	for _, c := range shCommands(text) {
		n++
		switch f := strings.Fields(c); {
		case f[0] == "make":
			if len(f) < 2 || !targets[f[1]] {
				t.Errorf("%s: %q: no such make target", doc, c)
			}
		case c == "docker compose up":
			if _, err := os.Stat(filepath.Join(repoRoot, "compose.yaml")); err != nil {
				t.Errorf("%s: %q: %v", doc, c, err)
			}
		case c == "set -a; . .run/env; set +a":
			if !strings.Contains(readDoc(t, "scripts/local.sh"), "/env") {
				t.Errorf("%s: %q: scripts/local.sh writes no env file", doc, c)
			}
		case strings.HasPrefix(c, "go run ./cmd/loadgen "):
			args, err := shellwords.Parse(strings.TrimPrefix(c, "go run ./cmd/loadgen "))
			if err != nil {
				t.Fatalf("%s: %q: %v", doc, c, err)
			}
			if s, _, err := ParseArgs(args, func(string) string { return "" }, io.Discard); err != nil || s == nil {
				t.Errorf("%s: %q does not parse: %v", doc, c, err)
			}
			if !loadgen[c] {
				t.Errorf("%s: %q is no experiment page's command (the ones the docs' tests run)", doc, c)
			}
		case goTest.MatchString(c):
			m := goTest.FindStringSubmatch(c)
			pattern, err := regexp.Compile(strings.Trim(m[1], `'"`))
			if err != nil {
				t.Errorf("%s: %q: %v", doc, c, err)
				continue
			}
			files, _ := filepath.Glob(filepath.Join(repoRoot, m[2], "*_test.go"))
			found := false
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, fn := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(b), -1) {
					found = found || pattern.MatchString(fn[1])
				}
			}
			if !found {
				t.Errorf("%s: %q: no test of %s matches %s", doc, c, m[2], m[1])
			}
		default:
			t.Errorf("%s: %q is not a command the docs' tests know how to check", doc, c)
		}
	}
	for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
		if !targets[m[1]] {
			t.Errorf("%s: `make %s`: no such make target", doc, m[1])
		}
	}
	return n
}

// TestPrimer: docs/primer.md stays a page to hand out (at most about 1,500
// words), explains four ideas each with one picture from a committed report
// and one command, quotes only figures its cited reports hold, links only
// what exists, and shows only commands that run as written.
func TestPrimer(t *testing.T) {
	const doc = "docs/primer.md"
	text := readDoc(t, doc)
	if n := words(text); n > 1600 {
		t.Errorf("%s has %d words; keep it at most about 1,500 (limit 1,600)", doc, n)
	}
	checkLinks(t, doc, text, true)
	if n := checkQuotes(t, doc, text); n < 4 {
		t.Errorf("%s: %d paragraphs cite a committed report; want one per idea at least", doc, n)
	}
	if n := checkCommands(t, doc, text); n < 5 {
		t.Errorf("%s: %d commands; want the start and one per idea", doc, n)
	}

	sections := regexp.MustCompile(`(?m)^## `).Split(text, -1)[1:]
	ideas := 0
	for _, s := range sections {
		title, _, _ := strings.Cut(s, "\n")
		if !regexp.MustCompile(`^\d\. `).MatchString(title) {
			continue
		}
		ideas++
		images := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllStringSubmatch(s, -1)
		if len(images) != 1 || strings.Count(s, "```sh\n") != 1 {
			t.Errorf("%s: %q has %d pictures and %d commands; want one of each", doc, title, len(images), strings.Count(s, "```sh\n"))
		}
		for _, img := range images {
			report := filepath.Join(repoRoot, "docs", filepath.Dir(img[1]), "report.md")
			if _, err := os.Stat(report); err != nil {
				t.Errorf("%s: %q: the picture %s is not from a committed report (%v)", doc, title, img[1], err)
			}
		}
	}
	if ideas != 4 {
		t.Errorf("%s has %d numbered ideas; want four", doc, ideas)
	}
	if !strings.Contains(text, "\n## Where to read further\n") {
		t.Errorf("%s has no section ## Where to read further", doc)
	}
}

// TestReadmeIsShortAndLinksThePrimer: the README stays a page a newcomer
// reads in ten minutes (at most about 1,500 words), hands out the primer,
// labels the ten-minute path, states the test command CI runs (make test),
// links only files of the repository and shows only commands that run.
func TestReadmeIsShortAndLinksThePrimer(t *testing.T) {
	const doc = "README.md"
	text := readDoc(t, doc)
	if n := words(text); n > 1600 {
		t.Errorf("%s has %d words; keep it at most about 1,500 (limit 1,600): move the rest to docs/", doc, n)
	}
	if !strings.Contains(text, "](docs/primer.md)") {
		t.Errorf("%s does not link docs/primer.md", doc)
	}
	if !strings.Contains(text, "\n## See a stampede and see XFetch stop it in ten minutes\n") {
		t.Errorf("%s has no labelled ten-minute path", doc)
	}
	found := false
	for _, c := range shCommands(text) {
		found = found || c == "make test"
	}
	if !found {
		t.Errorf("%s does not state the test command, make test, in an sh block (.ci/run runs it)", doc)
	}
	checkLinks(t, doc, text, true)
	checkQuotes(t, doc, text)
	checkCommands(t, doc, text)
}

// TestPagesTheReadmeMovedTo: the pages that took the README's sections link
// only what exists and name only make targets that exist.
func TestPagesTheReadmeMovedTo(t *testing.T) {
	for _, doc := range []string{"docs/running.md", "docs/experiments.md", "docs/testing.md"} {
		text := readDoc(t, doc)
		checkLinks(t, doc, text, false)
		for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
			if !makeTargets(t)[m[1]] {
				t.Errorf("%s: `make %s`: no such make target", doc, m[1])
			}
		}
	}
}
