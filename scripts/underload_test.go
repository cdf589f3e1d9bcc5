//go:build unix

package scripts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestUnderLoad runs scripts/test-under-load.sh on a module of three tiny
// packages (one passes, one fails, one blocks):
//  1. COUNT=2 on the passing one: two runs, each with a line saying pass,
//     as many hogs as nproc says, and none left afterwards;
//  2. on the failing one: the script exits non-zero, says FAIL for the run,
//     and leaves no hog;
//  3. with COUNT=0: exits non-zero with an error, and starts no hog;
//  4. interrupted (SIGINT to its process group, as Ctrl-C) while the
//     blocking one runs: the hogs ran, and the script ends them and exits
//     non-zero.
func TestUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test under CPU hogs")
	}
	dir := tinyModule(t)
	out, err := exec.Command("nproc").Output()
	if err != nil {
		t.Fatal(err)
	}
	cores, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("pass", func(t *testing.T) {
		out, err := underLoad(t, dir, "./pass", "2")
		if err != nil {
			t.Fatalf("test-under-load on a passing package: %v\n%s", err, out)
		}
		for _, run := range []string{"run 1 of 2: pass in ", "run 2 of 2: pass in "} {
			if !strings.Contains(out, run) {
				t.Errorf("no line %q:\n%s", run, out)
			}
		}
		if !strings.Contains(out, "2 of 2 runs passed") {
			t.Errorf("no summary of two passed runs:\n%s", out)
		}
		if hogs := hogPids(t, out); len(hogs) != cores {
			t.Errorf("%d hogs (%v), want one per core: %d", len(hogs), hogs, cores)
		}
		checkNoHogs(t, out)
	})

	t.Run("fail", func(t *testing.T) {
		out, err := underLoad(t, dir, "./fail", "1")
		if err == nil {
			t.Fatalf("test-under-load on a failing package exited 0:\n%s", out)
		}
		if !strings.Contains(out, "run 1 of 1: FAIL in ") || !strings.Contains(out, "0 of 1 runs passed") {
			t.Errorf("no FAIL line and summary for the run:\n%s", out)
		}
		checkNoHogs(t, out)
	})

	t.Run("bad count", func(t *testing.T) {
		out, err := underLoad(t, dir, "./pass", "0")
		if err == nil || !strings.Contains(out, "COUNT must be") || hogsLine.MatchString(out) {
			t.Errorf("COUNT=0: err %v, want an exit with an error about COUNT before any hog starts:\n%s", err, out)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := underLoadCmd(ctx, dir, "./block", "1")
		out := &output{want: "blocking until interrupted", ready: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		ended := false
		defer func() { // on a failure below, leave nothing running
			if !ended {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}()
		// The blocking test prints its line once it runs, the hogs started.
		select {
		case <-out.ready:
		case err := <-exited:
			ended = true
			t.Fatalf("the script ended (%v) before the blocking test ran:\n%s", err, out)
		}
		for _, pid := range hogPids(t, out.String()) {
			if !alive(pid) {
				t.Errorf("hog %d does not run while the tests run", pid)
			}
		}
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := <-exited
		ended = true
		t.Logf("test-under-load.sh PKG=./block, interrupted:\n%s", out)
		switch {
		case ctx.Err() != nil:
			t.Fatalf("the script did not end within 5 minutes of SIGINT")
		case err == nil:
			t.Errorf("interrupted, the script exited 0")
		}
		checkNoHogs(t, out.String())
	})
}

// output collects a command's output and closes ready once it holds want.
type output struct {
	mu    sync.Mutex
	buf   strings.Builder
	want  string
	ready chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	had := strings.Contains(o.buf.String(), o.want)
	o.buf.Write(p)
	if !had && strings.Contains(o.buf.String(), o.want) {
		close(o.ready)
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// tinyModule writes a module with packages pass, fail and block (whose test
// prints a line and then waits to be interrupted) and returns its directory.
func tinyModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":            "module tiny\n\ngo 1.26\n",
		"pass/pass_test.go": "package pass\n\nimport \"testing\"\n\nfunc TestPass(t *testing.T) {}\n",
		"fail/fail_test.go": "package fail\n\nimport \"testing\"\n\nfunc TestFail(t *testing.T) { t.Fatal(\"fails on purpose\") }\n",
		"block/block_test.go": "package block\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n\t\"time\"\n)\n\n" +
			"func TestBlock(t *testing.T) {\n\tfmt.Println(\"blocking until interrupted\")\n\ttime.Sleep(time.Hour)\n}\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// underLoadCmd is scripts/test-under-load.sh run in dir on pkg, count times,
// without the race detector (the script's own flags are not under test),
// verbose so that a test's output streams.
func underLoadCmd(ctx context.Context, dir, pkg, count string) *exec.Cmd {
	script, _ := filepath.Abs(filepath.Join("..", "scripts", "test-under-load.sh"))
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PKG="+pkg, "COUNT="+count, "TESTFLAGS=-count=1 -v -timeout 5m", "GOWORK=off", "GOFLAGS=")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// underLoad runs underLoadCmd to its end and returns its output.
func underLoad(t *testing.T, dir, pkg, count string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := underLoadCmd(ctx, dir, pkg, count)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("test-under-load.sh PKG=%s COUNT=%s (%v):\n%s", pkg, count, time.Since(start).Round(time.Millisecond), out)
	return string(out), err
}

var hogsLine = regexp.MustCompile(`busy processes beside the tests \(pids ([0-9 ]+)\)`)

// hogPids returns the pids of the hogs the script's output lists.
func hogPids(t *testing.T, out string) []int {
	t.Helper()
	m := hogsLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the output lists no hogs:\n%s", out)
	}
	var pids []int
	for _, f := range strings.Fields(m[1]) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// checkNoHogs checks that none of the hogs out lists still runs.
func checkNoHogs(t *testing.T, out string) {
	t.Helper()
	for _, pid := range hogPids(t, out) {
		if alive(pid) {
			t.Errorf("hog %d still runs after the script ended", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
