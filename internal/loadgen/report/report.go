package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// Table is one GitHub Markdown table of a Report. Header is required; a row
// may have fewer cells than the header (the rest are blank) but not more.
// Cells are plain text: '|' is escaped and newlines become spaces. A column
// whose non-blank cells are all numbers ("12", "3.5 ms", "99.1%", "1,024";
// "-" counts as blank) is right-aligned.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
	Note   string // a paragraph under the table
}

// Report is a report directory's content apart from summary.json. Title,
// Intro and Notes are Markdown and written as given.
type Report struct {
	Title      string
	Intro      string
	Tables     []Table
	Charts     []Chart
	Waterfalls []Waterfall // trace charts, shown after Charts
	Notes      []string
}

// reportFile is the Markdown file Report.Write writes.
const reportFile = "report.md"

// Write creates dir if needed, renders every chart and waterfall to
// dir/<File> (replacing files of those names), then writes dir/report.md:
// the title, the intro, each table, each chart and waterfall as
// "![Title](File)", and the notes as a list. It checks every chart and
// table before writing anything: a File that is not a plain, unique name
// ending in ".png" (letters, digits, '.', '_', '-'), bad chart data (see
// Chart.WritePNG) or a bad table is an error. It returns the paths it
// wrote, charts first and report.md last; after an error while writing,
// the paths written so far.
func (r Report) Write(dir string) ([]string, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, c := range r.Charts {
		path := filepath.Join(dir, c.File)
		if err := c.WritePNG(path); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	for _, w := range r.Waterfalls {
		path := filepath.Join(dir, w.File)
		if err := w.WritePNG(path); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	path := filepath.Join(dir, reportFile)
	if err := os.WriteFile(path, []byte(r.markdown()), 0o644); err != nil {
		return written, err
	}
	return append(written, path), nil
}

// validate reports the first problem with r's tables or charts.
func (r Report) validate() error {
	files := make(map[string]bool)
	for i, c := range r.Charts {
		if err := checkChartFile(c.File); err != nil {
			return fmt.Errorf("chart %d (%q): %w", i, c.Title, err)
		}
		if files[c.File] {
			return fmt.Errorf("chart %d (%q): file %q is used by an earlier chart", i, c.Title, c.File)
		}
		files[c.File] = true
		if err := c.validate(); err != nil {
			return fmt.Errorf("chart %d (%q): %w", i, c.Title, err)
		}
	}
	for i, w := range r.Waterfalls {
		if err := checkChartFile(w.File); err != nil {
			return fmt.Errorf("waterfall %d (%q): %w", i, w.Title, err)
		}
		if files[w.File] {
			return fmt.Errorf("waterfall %d (%q): file %q is used by an earlier chart", i, w.Title, w.File)
		}
		files[w.File] = true
	}
	for i, t := range r.Tables {
		if len(t.Header) == 0 {
			return fmt.Errorf("table %d (%q): no header", i, t.Title)
		}
		for j, row := range t.Rows {
			if len(row) > len(t.Header) {
				return fmt.Errorf("table %d (%q): row %d has %d cells, the header %d", i, t.Title, j, len(row), len(t.Header))
			}
		}
	}
	return nil
}

// checkChartFile accepts a plain PNG file name such as "latency.png".
func checkChartFile(name string) error {
	base, ok := strings.CutSuffix(name, ".png")
	plain := func(r rune) bool {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-'
	}
	if !ok || base == "" || strings.HasPrefix(name, ".") || strings.IndexFunc(name, func(r rune) bool { return !plain(r) }) >= 0 {
		return fmt.Errorf("file %q: want a plain file name such as \"latency.png\": letters, digits, '.', '_' or '-', ending in \".png\", no directories", name)
	}
	return nil
}

// markdown renders the validated report.
func (r Report) markdown() string {
	var b strings.Builder
	para := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			b.WriteString(s)
			b.WriteString("\n\n")
		}
	}
	if r.Title != "" {
		para("# " + r.Title)
	}
	para(r.Intro)
	for _, t := range r.Tables {
		if t.Title != "" {
			para("## " + t.Title)
		}
		t.write(&b)
		para(t.Note)
	}
	image := func(title, file string) {
		if title == "" {
			title = file
		}
		alt := strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "\n", " ").Replace(title)
		para("![" + alt + "](" + file + ")")
	}
	if len(r.Charts)+len(r.Waterfalls) > 0 {
		para("## Charts")
		for _, c := range r.Charts {
			image(c.Title, c.File)
		}
		for _, w := range r.Waterfalls {
			image(w.Title, w.File)
		}
	}
	if len(r.Notes) > 0 {
		para("## Notes")
		for _, n := range r.Notes {
			b.WriteString("- ")
			b.WriteString(strings.ReplaceAll(strings.TrimSpace(n), "\n", "\n  "))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// write renders t as a GitHub Markdown table followed by a blank line.
func (t Table) write(b *strings.Builder) {
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Header {
			cell := ""
			if i < len(cells) {
				cell = escapeCell(cells[i])
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if t.numeric(i) {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	b.WriteString("\n")
}

// numeric reports whether column i has a number in some row and nothing
// but numbers and blanks in the others.
func (t Table) numeric(i int) bool {
	seen := false
	for _, r := range t.Rows {
		if i >= len(r) {
			continue
		}
		switch s := strings.TrimSpace(r[i]); {
		case s == "" || s == "-" || s == "—":
		case isNumber(s):
			seen = true
		default:
			return false
		}
	}
	return seen
}

// isNumber reports whether s is a number with an optional unit suffix:
// "42", "-1.5e3", "1,024", "3.2 ms", "99.5%", "1.8x", "120 req/s".
func isNumber(s string) bool {
	s = strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsSpace(r) || r == '%' || r == '/'
	})
	_, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return err == nil
}

// escapeCell makes s safe inside a Markdown table cell.
func escapeCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
