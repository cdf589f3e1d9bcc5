package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestExperimentRangesQuoteTheirRuns: an experiment doc's ranges from
// repeated runs ("- ttl, recomputes / key / TTL: 41.89 to 50.56 as found;
// ... beside the hogs.") are the least and greatest of that column over the
// committed report.md of each run (docs/experiments/runs/NAME/as-found-*.md
// and hogs-*.md), and its load-average line is the runs' 1-minute load
// average at the start, as loadgen recorded it in each introduction.
func TestExperimentRangesQuoteTheirRuns(t *testing.T) {
	line := regexp.MustCompile(`(?m)^- (\S+), ([^:]+): ([\d.]+) to ([\d.]+) as found; ([\d.]+) to ([\d.]+) beside the hogs\.`)
	loadLine := regexp.MustCompile(`(?m)^- load average \(1 min\) at the start: ([\d.]+) to ([\d.]+) as found; ([\d.]+) to ([\d.]+) beside the hogs\.`)
	intro := regexp.MustCompile(`load average \(1, 5, 15 min\) ([\d.]+), [\d.]+, [\d.]+ at the start`)
	checked := 0
	for doc, dir := range experimentDocs(t) {
		runs := filepath.Join(filepath.Dir(dir), "runs", filepath.Base(dir))
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := line.FindAllStringSubmatch(string(text), -1)
		if _, err := os.Stat(runs); err != nil {
			if len(lines) > 0 {
				t.Errorf("%s: ranges without their runs in %s", doc, runs)
			}
			continue
		}
		reports := map[string][]string{}
		for _, set := range []string{"as-found", "hogs"} {
			files, _ := filepath.Glob(filepath.Join(runs, set+"-*.md"))
			if len(files) < 3 {
				t.Errorf("%s: %d %s runs, want at least 3", runs, len(files), set)
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				reports[set] = append(reports[set], string(b))
			}
		}
		// rng is the least and greatest of get over a set's reports.
		rng := func(set string, get func(report string) (float64, error)) (lo, hi string, err error) {
			var vs []float64
			for _, r := range reports[set] {
				v, err := get(r)
				if err != nil {
					return "", "", err
				}
				vs = append(vs, v)
			}
			return f2(slices.Min(vs)), f2(slices.Max(vs)), nil
		}
		if len(lines) == 0 {
			t.Errorf("%s: runs in %s but no ranges", doc, runs)
		}
		for _, l := range lines {
			phase, column := l[1], l[2]
			cell := func(r string) (float64, error) {
				for _, tb := range mdTables(r) {
					j := slices.Index(tb.header, column)
					for _, row := range tb.rows {
						if j >= 0 && row[0] == phase && j < len(row) {
							return strconv.ParseFloat(row[j], 64)
						}
					}
				}
				return 0, fmt.Errorf("no %q of phase %s", column, phase)
			}
			for i, set := range []string{"as-found", "hogs"} {
				lo, hi, err := rng(set, cell)
				if err != nil {
					t.Errorf("%s: %s: %v", doc, strings.TrimSpace(l[0]), err)
					continue
				}
				if got := [2]string{f2(num(l[3+2*i])), f2(num(l[4+2*i]))}; got != [2]string{lo, hi} {
					t.Errorf("%s: %q: %s %s to %s, but the runs give %s to %s", doc, l[0], set, got[0], got[1], lo, hi)
				}
			}
			checked++
		}
		m := loadLine.FindStringSubmatch(string(text))
		if m == nil {
			t.Errorf("%s: no load-average line for its runs", doc)
			continue
		}
		for i, set := range []string{"as-found", "hogs"} {
			lo, hi, err := rng(set, func(r string) (float64, error) {
				m := intro.FindStringSubmatch(r)
				if m == nil {
					return 0, fmt.Errorf("a run's report records no load average")
				}
				return strconv.ParseFloat(m[1], 64)
			})
			if err != nil {
				t.Errorf("%s: %v", runs, err)
				continue
			}
			if got := [2]string{f2(num(m[1+2*i])), f2(num(m[2+2*i]))}; got != [2]string{lo, hi} {
				t.Errorf("%s: load average %s %s to %s, but the runs recorded %s to %s", doc, set, got[0], got[1], lo, hi)
			}
		}
	}
	if checked == 0 {
		t.Error("no experiment doc states ranges from repeated runs")
	}
}

func num(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}
