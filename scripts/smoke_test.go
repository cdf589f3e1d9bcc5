//go:build unix

package scripts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// TestSmokeRunLocal runs scripts/smoke.sh (without its Grafana checks)
// against the stack local.sh starts with DEMO=1, isolated as
// TestLocalStartStop is (a copy of the sources, its own RUN_DIR, database
// and free ports): the API is ready, the demo's load generator sends
// requests, and the local Prometheus scrapes the API and the load generator.
// When make jaeger has built Jaeger, local.sh runs it and smoke.sh checks
// that it holds the API's traces. Then smoke.sh must fail, naming the check,
// when the load generator's URL answers nothing, and local.sh stop must end
// the load generator.
func TestSmokeRunLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/local.sh and scripts/smoke.sh: Redis servers, Postgres, the api, loadgen, Prometheus")
	}
	t.Parallel()
	for _, bin := range []string{"curl", "jq", "redis-server", "psql", "pg_isready", "prometheus", "ps"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed; smoke.sh and local.sh need it (apt-get install curl jq redis-server postgresql-client prometheus procps)", bin)
		}
	}
	src := snapshot(t)
	run := t.TempDir()
	db := "stampede_smoke_" + randomHex(t)
	httpAddr, promAddr, loadgenAddr := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	dropDatabase(t, db)
	jaegerBin, withJaeger := jaegerBinary(t)
	env := append(environ(), "RUN_DIR="+run, "DB_NAME="+db, "HTTP_ADDR="+httpAddr, "PROMETHEUS_ADDR="+promAddr,
		"LOADGEN_ADDR="+loadgenAddr, "DEMO=1", "SCALE=0.001", "ADMIN_TOKEN=t0k", "JAEGER=", "JAEGER_BIN="+jaegerBin)
	t.Cleanup(func() { stopAll(t, src, env, run) })

	out := script(t, src, env, "start")
	if want := "http://" + loadgenAddr + "/metrics"; !strings.Contains(out, want) {
		t.Errorf("local.sh start with DEMO=1 does not tell the load generator's address %s", want)
	}
	loadgen := readInt(t, filepath.Join(run, "loadgen.pid"))
	if !alive(loadgen) {
		t.Fatalf("the recorded load generator (pid %d) does not run", loadgen)
	}

	smokeEnv := append(os.Environ(), "API_URLS=http://"+httpAddr, "LOADGEN_URL=http://"+loadgenAddr,
		"PROM_URL=http://"+promAddr, "SMOKE_GRAFANA=0", "SMOKE_TIMEOUT=60")
	wantOut := []string{"ok: API http://" + httpAddr, "ok: load generator", "ok: Prometheus", "Grafana skipped", "smoke: passed"}
	if withJaeger {
		smokeEnv = append(smokeEnv, "JAEGER_URL="+checkJaeger(t, run, out).queryURL())
		wantOut = append(wantOut, "ok: Jaeger")
	} else {
		smokeEnv = append(smokeEnv, "SMOKE_JAEGER=0")
	}
	out, err := smoke(t, smokeEnv)
	if err != nil {
		t.Fatalf("smoke.sh: %v\n%s", err, out)
	}
	for _, want := range wantOut {
		if !strings.Contains(out, want) {
			t.Errorf("smoke.sh output lacks %q:\n%s", want, out)
		}
	}

	// Nothing serves this address: the load generator check fails.
	out, err = smoke(t, append(smokeEnv, "LOADGEN_URL=http://"+testenv.FreeAddr(t), "SMOKE_TIMEOUT=2"))
	if err == nil || !strings.Contains(out, "FAIL: load generator") || strings.Contains(out, "passed") {
		t.Errorf("smoke.sh against a load generator URL that answers nothing: err %v, want a FAIL of the load generator check:\n%s", err, out)
	}

	script(t, src, env, "stop")
	if alive(loadgen) {
		t.Errorf("the load generator (pid %d) runs after stop", loadgen)
	}
}

// smoke runs scripts/smoke.sh of the checkout with env and returns its
// output.
func smoke(t *testing.T, env []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "scripts", "smoke.sh"))
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("smoke.sh (%v):\n%s", time.Since(start).Round(time.Millisecond), out)
	return string(out), err
}
