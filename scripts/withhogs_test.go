//go:build unix

package scripts_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestWithHogs runs scripts/with-hogs.sh (make experiments-busy's wrapper)
// around a command that exits 3: the script passes the status through,
// started one hog per core and leaves none behind; without a command it
// refuses before starting any.
func TestWithHogs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CPU hogs")
	}
	script, _ := filepath.Abs(filepath.Join("..", "scripts", "with-hogs.sh"))
	cmd := exec.Command("bash", script, "bash", "-c", "exit 3")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("with-hogs.sh around exit 3: %v, want exit status 3", err)
	}
	m := regexp.MustCompile(`(\d+) busy processes beside bash \(pids ([0-9 ]+)\)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no hogs listed:\n%s", out)
	}
	nproc, err := exec.Command("nproc").Output()
	if err != nil {
		t.Fatal(err)
	}
	if m[1] != strings.TrimSpace(string(nproc)) {
		t.Errorf("%s hogs, want one per core (%s)", m[1], strings.TrimSpace(string(nproc)))
	}
	for _, f := range strings.Fields(m[2]) {
		pid, _ := strconv.Atoi(f)
		if alive(pid) {
			t.Errorf("hog %d still runs after the script ended", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if !strings.Contains(string(out), "hogs stopped") {
		t.Errorf("no word that the hogs stopped:\n%s", out)
	}
	out, err = exec.Command("bash", script).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "usage") || strings.Contains(string(out), "busy processes") {
		t.Errorf("with-hogs.sh without a command: %v\n%s", err, out)
	}
}
