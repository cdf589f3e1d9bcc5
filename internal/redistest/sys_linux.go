package redistest

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// ProcAttr makes the kernel kill a child process when the process that
// started it dies, so that no server outlives a crashed or killed test run.
// Use it for any process a test starts (exec.Cmd.SysProcAttr).
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processStopped reads the process state from /proc: T means stopped.
func processStopped(pid int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, err
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false, fmt.Errorf("unexpected /proc stat %q", b)
	}
	return b[i+2] == 'T', nil
}
