package deploy_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkDemoFigures runs deploy/cmd/demofigures, the command docs/running.md's
// demo table comes from, over the healthy and stampede windows: it must
// find both kinds of burst and read the ttl burst's hottest key and
// category_stats queries above the xfetch bursts'.
func checkDemoFigures(t *testing.T, root, prom string, w e2eWindows) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demofigures")
	build := exec.Command("go", "build", "-o", bin, "./deploy/cmd/demofigures")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-prom", prom, "-start", w.healthy.from.UTC().Format(time.RFC3339),
		"-end", w.stampede.to.UTC().Format(time.RFC3339)).CombinedOutput()
	if err != nil {
		t.Fatalf("demofigures: %v\n%s", err, out)
	}
	table := string(out)
	t.Logf("\n%s", table)
	minutes := figureRow(t, table, "minutes sampled")
	hottest := figureRow(t, table, "recomputes of the hottest key")
	queries := figureRow(t, table, "category_stats database queries/s")
	switch {
	case minutes[1][0] == 0 || minutes[2][0] == 0:
		t.Errorf("minutes sampled %v: want both a ttl and an xfetch burst", minutes)
	case hottest[1][1] < hottest[2][1]+2:
		t.Errorf("hottest key recomputes: highest %g in the ttl burst, %g in the xfetch bursts; want the ttl burst at least 2 above", hottest[1][1], hottest[2][1])
	case queries[1][0] <= queries[2][0]:
		t.Errorf("category_stats queries/s: median %g in the ttl burst, %g in the xfetch bursts; want the ttl burst above", queries[1][0], queries[2][0])
	}
}

// figureRow returns, for the row of table whose name starts with name, the
// numbers of each class's cell ("–": none).
func figureRow(t *testing.T, table, name string) [3][]float64 {
	t.Helper()
	var out [3][]float64
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| "+name) {
			continue
		}
		cells := strings.Split(strings.Trim(line, " |"), " | ")
		if len(cells) != 4 {
			break
		}
		for i, c := range cells[1:] {
			for _, f := range strings.Fields(strings.NewReplacer("(", " ", ")", " ", "–", " ").Replace(c)) {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil {
					t.Fatalf("row %q cell %q: %v", name, c, err)
				}
				out[i] = append(out[i], v)
			}
			if len(out[i]) == 0 {
				out[i] = []float64{0, 0}
			}
		}
		return out
	}
	t.Fatalf("no row %q in:\n%s", name, table)
	return out
}
