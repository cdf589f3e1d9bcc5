//go:build unix

package scripts_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLockScriptsCost runs bench/lockscripts.sh (make bench-lock-scripts)
// with few calls: it prints a row for each of the four steps, with the
// server's time for every call; lockx's acquire script is the one read
// from internal/lockx (its SET ... GET on the fence counter shows as a
// second SET, and its TIME), and lockx's release path publishes.
func TestLockScriptsCost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server and runs redis-benchmark")
	}
	script, _ := filepath.Abs(filepath.Join("..", "bench", "lockscripts.sh"))
	cmd := exec.Command("bash", script)
	cmd.Env = append(cmd.Environ(), "N=3000", "KEYS=1000")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lockscripts.sh: %v\n%s", err, out)
	}
	row := regexp.MustCompile(`(?m)^\| ([^|]+) \| [0-9.]+ \| ([^|]+) \| -?[0-9.]+ \| [0-9]+ \|$`)
	rows := row.FindAllStringSubmatch(string(out), -1)
	if len(rows) != 4 {
		t.Fatalf("%d rows with figures, want 4:\n%s", len(rows), out)
	}
	inner := map[string]string{}
	for _, r := range rows {
		inner[strings.Fields(r[1])[0]+" "+strings.Fields(r[1])[1]] += r[2]
	}
	for step, want := range map[string][]string{
		"lockx acquire": {"TIME", "SET", "×2"},
		"lockx release": {"GET", "DEL", "PUBLISH"},
		"raw release":   {"GET", "DEL"},
	} {
		for _, w := range want {
			if !strings.Contains(inner[step], w) {
				t.Errorf("%s: %q inside, want %s:\n%s", step, inner[step], w, out)
			}
		}
	}
	if strings.Contains(inner["raw release"], "PUBLISH") {
		t.Errorf("the raw release publishes:\n%s", out)
	}
}
