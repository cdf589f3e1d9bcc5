package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedReportsReplotIdentically renders every committed experiment
// and capacity report (docs/experiments, docs/benchmarks) again from its
// summary.json: report.md and every chart must come
// out byte for byte as committed, so the references are what this code
// draws from those figures.
func TestCommittedReportsReplotIdentically(t *testing.T) {
	dirs, err := filepath.Glob("../../../docs/experiments/*/summary.json")
	quiet, _ := filepath.Glob("../../../docs/experiments/quiet/*/summary.json")
	more, _ := filepath.Glob("../../../docs/benchmarks/*/summary.json")
	dirs = append(append(dirs, quiet...), more...)
	if err != nil || len(more) == 0 {
		t.Fatalf("no committed summaries found: %v", err)
	}
	for _, summary := range dirs {
		committed := filepath.Dir(summary)
		t.Run(strings.TrimPrefix(committed, "../../../docs/"), func(t *testing.T) {
			t.Parallel() // each renders its own directory
			dir := t.TempDir()
			b, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := Replot(dir, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(committed, "*"))
			drawn, _ := filepath.Glob(filepath.Join(dir, "*"))
			if len(files) != len(drawn) {
				t.Errorf("committed %d files, replot drew %d", len(files), len(drawn))
			}
			for _, f := range files {
				want, _ := os.ReadFile(f)
				got, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s differs from its replot (%v): regenerate with loadgen -report-dir %s replot", f, err, committed)
				}
			}
		})
	}
}
