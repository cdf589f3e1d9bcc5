package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeUnits splits a Markdown text into paragraphs and list items.
func readmeUnits(text string) []string {
	var units []string
	item := regexp.MustCompile(`^(\d+\.|-) `)
	for _, block := range strings.Split(text, "\n\n") {
		var cur []string
		for _, line := range strings.Split(block, "\n") {
			if item.MatchString(line) && len(cur) > 0 {
				units = append(units, strings.Join(cur, "\n"))
				cur = nil
			}
			cur = append(cur, item.ReplaceAllString(line, ""))
		}
		units = append(units, strings.Join(cur, "\n"))
	}
	return units
}

var (
	// experimentLink finds a link to an experiment's page or files, busy
	// (the committed reference) or quiet (docs/experiments/quiet/), from the
	// repository's root (docs/experiments/...) or from docs/ (experiments/...).
	experimentLink = regexp.MustCompile(`(?:^|[(/\s])experiments/(?:quiet/)?(\d\d-[a-z-]+)(?:\.md|/)`)
	// linkTarget is a Markdown link's or image's target, dropped before
	// numbers are read (a path is no figure).
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
	number     = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)
)

// numbers returns the numbers of text, thousands separators dropped.
func numbers(text string) map[string]bool {
	out := map[string]bool{}
	for _, n := range number.FindAllString(text, -1) {
		out[strings.ReplaceAll(strings.TrimRight(n, ","), ",", "")] = true
	}
	return out
}

// readmeQuoteDocs are the pages TestReadmeQuotesItsReports holds to the
// reports: the README (the picture's caption, the ten-minute path) and
// docs/experiments.md, where the README's list of experiments moved.
var readmeQuoteDocs = []string{"../../../README.md", "../../../docs/experiments.md"}

// TestReadmeQuotesItsReports: every number in a paragraph or list item of
// README.md or docs/experiments.md that links one guided experiment (the
// picture's caption, the list of experiments) occurs in that experiment's
// committed report.md, busy or quiet (experimentReports),
// which TestCommittedReportsReplotIdentically renders from summary.json. A
// figure from an older run, or one rounded differently, fails.
func TestReadmeQuotesItsReports(t *testing.T) {
	checked := 0
	for _, path := range readmeQuoteDocs {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checked += quotesReports(t, filepath.Base(path), string(doc))
	}
	if checked < 5 {
		t.Errorf("%d paragraphs of the README and docs/experiments.md cite an experiment; want the caption and the five experiments", checked)
	}
}

// quotesReports checks every paragraph or list item of doc that links one
// guided experiment against that experiment's reports and returns how many
// it checked.
func quotesReports(t *testing.T, name, doc string) int {
	t.Helper()
	checked := 0
	for _, u := range readmeUnits(doc) {
		linked := map[string]bool{}
		for _, m := range experimentLink.FindAllStringSubmatch(u, -1) {
			linked[m[1]] = true
		}
		if len(linked) != 1 {
			continue
		}
		for exp := range linked {
			have := numbers(experimentReports(t, exp))
			for n := range numbers(linkTarget.ReplaceAllString(u, "]")) {
				if !have[n] {
					t.Errorf("%s quotes %s beside %s, which its report.md does not hold:\n%s", name, n, exp, u)
				}
			}
			checked++
		}
	}
	return checked
}

// experimentReports returns the committed report.md of experiment exp
// ("01-stampede"), followed by its quiet run's when there is one
// (docs/experiments/quiet/, make experiments-quiet).
func experimentReports(t *testing.T, exp string) string {
	t.Helper()
	rep, err := os.ReadFile(filepath.Join("../../../docs/experiments", exp, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := os.ReadFile(filepath.Join("../../../docs/experiments/quiet", exp, "report.md"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(rep) + "\n" + string(quiet)
}
