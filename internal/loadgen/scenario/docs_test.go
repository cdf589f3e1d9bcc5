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

// mdTable is a Markdown table: its header and rows of cells.
type mdTable struct {
	header []string
	rows   [][]string
}

// mdTables returns the tables of a Markdown text.
func mdTables(text string) []mdTable {
	var out []mdTable
	var cur *mdTable
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			cur = nil
			continue
		}
		switch {
		case cur == nil:
			out = append(out, mdTable{header: cells(line)})
			cur = &out[len(out)-1]
		case strings.Trim(strings.TrimSpace(line), "|-: ") == "":
			// the separator line
		default:
			cur.rows = append(cur.rows, cells(line))
		}
	}
	return out
}

// experimentDocs returns each experiment's doc and its committed report
// directory.
func experimentDocs(t *testing.T) map[string]string {
	t.Helper()
	docs, err := filepath.Glob("../../../docs/experiments/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no experiment docs: %v", err)
	}
	out := map[string]string{}
	for _, d := range docs {
		out[d] = strings.TrimSuffix(d, ".md")
	}
	return out
}

// TestExperimentDocsQuoteTheirReports: every table in an experiment's doc
// is a copy of (some columns of) a table of the committed report.md, busy
// or quiet (bold allowed), which
// TestCommittedReportsReplotIdentically renders from summary.json: a number
// in a doc's table is a number of the summary.
func TestExperimentDocsQuoteTheirReports(t *testing.T) {
	for doc, dir := range experimentDocs(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rep := experimentReports(t, filepath.Base(dir))
		tables := mdTables(string(text))
		if len(tables) == 0 {
			t.Errorf("%s: no result table", doc)
		}
		for _, dt := range tables {
			if !quoted(dt, mdTables(rep)) {
				t.Errorf("%s: table %q is not a copy of a table of %s/report.md", doc, dt.header, filepath.Base(dir))
			}
		}
	}
}

// quoted reports whether some report table has every column of dt and, for
// each of dt's rows, a row with the same first cell and the same values.
func quoted(dt mdTable, report []mdTable) bool {
	for _, rt := range report {
		col := map[string]int{}
		for i, h := range rt.header {
			col[h] = i
		}
		match := len(dt.rows) > 0
		for _, row := range dt.rows {
			found := false
			for _, rr := range rt.rows {
				same := len(row) == len(dt.header)
				for i, h := range dt.header {
					j, ok := col[h]
					if !same || !ok || j >= len(rr) || rr[j] != strings.Trim(row[i], "*") {
						same = false
						break
					}
				}
				if same {
					found = true
					break
				}
			}
			match = match && found
		}
		if match {
			return true
		}
	}
	return false
}

// TestExperimentCommandsParse: every loadgen command in the experiment docs
// is accepted as written, and the ones that run next to the compose demo
// (-pause-demo) do not take its listener (-metrics-addr) or write into the
// committed references.
func TestExperimentCommandsParse(t *testing.T) {
	cmd := regexp.MustCompile(`(?m)^go run \./cmd/loadgen ((?:.*\\\n)*.*)$`)
	composeVariants := 0
	for doc := range experimentDocs(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		found := cmd.FindAllStringSubmatch(string(text), -1)
		if len(found) == 0 {
			t.Errorf("%s: no loadgen command", doc)
		}
		for _, m := range found {
			line := strings.ReplaceAll(m[1], "\\\n", " ")
			line, _, _ = strings.Cut(line, " #")
			args, err := shellwords.Parse(line)
			if err != nil {
				t.Fatalf("%s: %q: %v", doc, line, err)
			}
			s, cfg, err := ParseArgs(args, func(string) string { return "" }, io.Discard)
			if err != nil || s == nil {
				t.Errorf("%s: %q: %v", doc, line, err)
				continue
			}
			if cfg.PauseDemo != nil {
				composeVariants++
				if cfg.MetricsAddr == "127.0.0.1:9102" || cfg.MetricsAddr == ":9102" {
					t.Errorf("%s: %q listens where the demo does (%s)", doc, line, cfg.MetricsAddr)
				}
			}
			if strings.HasPrefix(cfg.ReportDir, "docs/") {
				t.Errorf("%s: %q writes into the committed reference %s; experiments write to a scratch directory unless asked", doc, line, cfg.ReportDir)
			}
		}
	}
	if composeVariants == 0 {
		t.Error("no experiment shows how to run next to the compose demo (-pause-demo)")
	}
}

// TestMakeExperimentsRunsTheDocumentedCommands: `make experiments` runs each
// experiment's first command as its doc shows it, only writing into
// EXPERIMENTS_DIR, by default the committed references.
func TestMakeExperimentsRunsTheDocumentedCommands(t *testing.T) {
	mk, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile(`(?m)^go run \./cmd/loadgen ((?:.*\\\n)*.*)$`)
	if !strings.Contains(string(mk), "\nEXPERIMENTS_DIR ?= docs/experiments\n") {
		t.Error("Makefile: EXPERIMENTS_DIR does not default to the committed references, docs/experiments")
	}
	for doc, dir := range experimentDocs(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := cmd.FindStringSubmatch(string(text))
		if m == nil {
			t.Errorf("%s: no loadgen command", doc)
			continue
		}
		args := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
		args = append(args[:len(args)-1:len(args)-1], "-report-dir", "$(EXPERIMENTS_DIR)/"+filepath.Base(dir), args[len(args)-1])
		want := "\t$(LOADGEN) " + strings.Join(args[2:], " ") + "\n"
		if !strings.HasPrefix(m[1], "-admin-token local-admin ") || !strings.Contains(string(mk), want) {
			t.Errorf("Makefile's experiments target lacks %q (the command of %s with -report-dir)", want, doc)
		}
	}
}
