package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// privatePostgres initialises and starts a throwaway Postgres cluster in the
// test's temporary folder with initdb and pg_ctl, stopped at the end of the
// test. It costs seconds, so it is the fallback after a running server.
func privatePostgres(tb TB) (string, error) {
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", errors.New("initdb not on PATH")
	}
	pgctl, err := exec.LookPath("pg_ctl")
	if err != nil {
		return "", errors.New("pg_ctl not on PATH")
	}
	if os.Geteuid() == 0 {
		return "", errors.New("initdb refuses to run as root; run tests as another user or start Postgres")
	}
	dir := tb.TempDir()
	data := filepath.Join(dir, "data")
	out, err := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := redistest.FreePort(false)
	if err != nil {
		return "", err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off", port, dir)
	out, err = exec.Command(pgctl, "-D", data, "-l", filepath.Join(dir, "postgres.log"), "-o", opts, "-w", "start").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	tb.Cleanup(func() { _ = exec.Command(pgctl, "-D", data, "-m", "immediate", "-w", "stop").Run() })
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(port) + "/postgres?sslmode=disable", nil
}
