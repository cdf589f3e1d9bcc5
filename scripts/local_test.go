//go:build unix

// Package scripts_test runs scripts/local.sh (make run-local and
// stop-local) for real: the test sits next to the script, in a directory
// with no Go package of its own (as deploy/ holds its tests). Each run is
// isolated: a copy of the sources, its own RUN_DIR, database, API port and
// Prometheus port. It needs redis-server, the Postgres client tools and a
// Postgres on 127.0.0.1:5432 (user postgres), as the script does.
package scripts_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// server is a process the script recorded.
type server struct{ pid, port int }

// TestLocalStartStop runs local.sh start four times and stop once:
//  1. it starts four Redis servers on free ports (none of the fixed ones),
//     records their pids and ports and prints their addresses, and the API
//     uses them;
//  2. after a rebuild with other -ldflags, start restarts the API and reuses
//     the Redis servers;
//  3. with nothing changed, start restarts nothing;
//  4. when a recorded Redis died and another Redis answers on its port,
//     start does not take that one for its own: it starts a new server, and
//     restarts the API on the new address;
//  5. near starts a second API, the near cache on, beside the first;
//  6. stop ends every recorded process, and not the other Redis.
//
// When make jaeger has built Jaeger, start also runs it on free ports (not
// Jaeger's defaults), records them and points the API at it: a request with
// a sampled traceparent shows up in Jaeger as a trace of stampede-api.
// Restarts follow the API's rules, and stop ends it. Prometheus, when
// installed, stores exemplars.
func TestLocalStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/local.sh: Redis servers, Postgres, the api")
	}
	t.Parallel()
	for _, bin := range []string{"redis-server", "psql", "pg_isready", "curl", "ps"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed; local.sh needs it (apt-get install redis-server postgresql-client curl procps)", bin)
		}
	}
	// The Redis servers the script records, the cache's first, and the
	// ports on which an older script reused whatever answered.
	redisNames := []string{"cache", "lock1", "lock2", "lock3"}
	fixedPorts := []int{6379, 7001, 7002, 7003}
	src := snapshot(t)
	run := t.TempDir()
	db := "stampede_localsh_" + randomHex(t)
	httpAddr := testenv.FreeAddr(t)
	dropDatabase(t, db)
	jaegerBin, withJaeger := jaegerBinary(t)
	env := append(environ(), "RUN_DIR="+run, "DB_NAME="+db, "HTTP_ADDR="+httpAddr, "PROMETHEUS_ADDR="+testenv.FreeAddr(t),
		"SCALE=0.001", "ADMIN_TOKEN=t0k", "DEMO=0", "JAEGER=", "JAEGER_BIN="+jaegerBin)
	// build(n) changes the api binary with n: an -X of no variable still
	// lands in the binary's build info.
	build := func(n int) []string {
		return append(env, fmt.Sprintf("GOFLAGS=%s -ldflags=-X=main.localTestBuild=%d", os.Getenv("GOFLAGS"), n))
	}
	t.Cleanup(func() { stopAll(t, src, env, run) })

	// 1. Fresh start.
	out := script(t, src, build(1), "start")
	redises := map[string]server{}
	var lockURLs []string
	for _, name := range redisNames {
		s := recorded(t, run, name)
		if slices.Contains(fixedPorts, s.port) {
			t.Fatalf("redis %s recorded on fixed port %d", name, s.port) // before connecting: it may not be ours
		}
		for other, o := range redises {
			if o.port == s.port {
				t.Fatalf("redis %s and %s share port %d", name, other, s.port)
			}
		}
		if got := redisPid(s.port); got != s.pid {
			t.Fatalf("redis %s: the server on port %d is pid %d, recorded %d", name, s.port, got, s.pid)
		}
		url := fmt.Sprintf("redis://127.0.0.1:%d", s.port)
		if !strings.Contains(out, url) {
			t.Errorf("the output does not tell redis %s's address %s:\n%s", name, url, out)
		}
		if name != "cache" {
			lockURLs = append(lockURLs, url)
		}
		redises[name] = s
	}
	wantEnv := map[string]string{"REDIS_URL": fmt.Sprintf("redis://127.0.0.1:%d", redises["cache"].port), "LOCK_REDIS_URLS": strings.Join(lockURLs, ","),
		"HTTP_ADDR": httpAddr, "LOADGEN_TARGET": "http://" + httpAddr, "ADMIN_TOKEN": "t0k"}
	var jaeger jaegerServer
	if withJaeger {
		jaeger = checkJaeger(t, run, out)
		wantEnv["OTEL_EXPORTER_OTLP_ENDPOINT"] = jaeger.otlpURL()
		wantEnv["JAEGER_URL"] = jaeger.queryURL()
	} else {
		wantEnv["OTEL_EXPORTER_OTLP_ENDPOINT"] = ""
		if _, err := os.Stat(filepath.Join(run, "jaeger.pid")); err == nil {
			t.Errorf("no Jaeger binary at %s, and yet a jaeger.pid", jaegerBin)
		}
		if !strings.Contains(out, "make jaeger") {
			t.Errorf("without a Jaeger binary, the output does not say to run make jaeger:\n%s", out)
		}
	}
	checkEnvFile(t, run, wantEnv)
	api := checkAPI(t, run, httpAddr)
	for name, s := range redises {
		// The api's pool keeps the connection /health used.
		if n := connectedClients(s.port); n < 2 {
			t.Errorf("redis %s has %d clients: the api does not use it", name, n)
		}
	}
	checkPrometheus(t, run)
	checkScraped(t, run, out)
	walkReadme(t, run)
	walkRunbooks(t, run)
	freezeCacheRedis(t, run, httpAddr)
	if withJaeger {
		if penv, ok := processEnv(t, api); ok && penv["OTEL_EXPORTER_OTLP_ENDPOINT"] != jaeger.otlpURL() {
			t.Errorf("the api runs with OTEL_EXPORTER_OTLP_ENDPOINT=%q, want %s (the Jaeger started)", penv["OTEL_EXPORTER_OTLP_ENDPOINT"], jaeger.otlpURL())
		}
		checkTraced(t, httpAddr, jaeger)
	}

	// 2. Another binary: the api restarts, the Redis servers stay.
	script(t, src, build(2), "start")
	api2 := checkAPI(t, run, httpAddr)
	if api2 == api {
		t.Fatalf("the api binary changed and the api kept running (pid %d)", api)
	}
	if alive(api) {
		t.Errorf("the old api (pid %d) still runs", api)
	}
	checkSameRedis(t, run, redises)

	// 3. Nothing changed: nothing restarts.
	script(t, src, build(2), "start")
	if api3 := checkAPI(t, run, httpAddr); api3 != api2 {
		t.Fatalf("nothing changed and the api was restarted (pid %d, then %d)", api2, api3)
	}
	checkSameRedis(t, run, redises)
	if withJaeger {
		if j := checkJaeger(t, run, ""); j != jaeger {
			t.Errorf("nothing changed and Jaeger was restarted or moved: %+v, then %+v", jaeger, j)
		}
	}

	// 4. lock2 dies and a Redis the script did not start takes its port.
	old := redises["lock2"]
	if err := syscall.Kill(old.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "redis lock2 to exit", func() bool { return !alive(old.pid) })
	foreign := startRedis(t, old.port)
	script(t, src, build(2), "start")
	lock2 := recorded(t, run, "lock2")
	if lock2.pid == foreign.pid || lock2.port == foreign.port {
		t.Fatalf("start took the other Redis (pid %d, port %d) for lock2: recorded %+v", foreign.pid, foreign.port, lock2)
	}
	if slices.Contains(fixedPorts, lock2.port) {
		t.Fatalf("redis lock2 recorded on fixed port %d", lock2.port)
	}
	if got := redisPid(lock2.port); got != lock2.pid {
		t.Fatalf("redis lock2: the server on port %d is pid %d, recorded %d", lock2.port, got, lock2.pid)
	}
	redises["lock2"] = lock2
	lockURLs[1] = fmt.Sprintf("redis://127.0.0.1:%d", lock2.port)
	wantEnv["LOCK_REDIS_URLS"] = strings.Join(lockURLs, ",")
	checkEnvFile(t, run, wantEnv)
	if api4 := checkAPI(t, run, httpAddr); api4 == api2 {
		t.Errorf("lock2 moved to port %d and the api kept running with the old address (pid %d)", lock2.port, api4)
	}
	checkSameRedis(t, run, redises)

	// 5. near: a second API with the near cache on, beside the first.
	nearAddr := testenv.FreeAddr(t)
	script(t, src, append(env, "NEAR_HTTP_ADDR="+nearAddr), "near")
	near := readInt(t, filepath.Join(run, "api-near.pid"))
	if !alive(near) {
		t.Fatalf("the recorded near api (pid %d) does not run", near)
	}
	for addr, want := range map[string]bool{nearAddr: true, httpAddr: false} {
		if got := strings.Contains(get(t, "http://"+addr+"/metrics"), "cachex_near_hits_total"); got != want {
			t.Errorf("the api on %s exports cachex_near_hits_total: %v, want %v (near cache on only in the second)", addr, got, want)
		}
	}

	// 6. Stop.
	api5 := readInt(t, filepath.Join(run, "api.pid"))
	var prometheus int
	if b, err := os.ReadFile(filepath.Join(run, "prometheus.pid")); err == nil {
		prometheus, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	script(t, src, env, "stop")
	if alive(api5) {
		t.Errorf("the api (pid %d) runs after stop", api5)
	}
	if withJaeger && alive(jaeger.pid) {
		t.Errorf("jaeger (pid %d) runs after stop", jaeger.pid)
	}
	if alive(near) {
		t.Errorf("the near api (pid %d) runs after stop", near)
	}
	if prometheus != 0 && alive(prometheus) {
		t.Errorf("prometheus (pid %d) runs after stop", prometheus)
	}
	for name, s := range redises {
		if alive(s.pid) {
			t.Errorf("redis %s (pid %d) runs after stop", name, s.pid)
		}
	}
	if redisPid(foreign.port) != foreign.pid {
		t.Errorf("stop ended the Redis it did not start (pid %d)", foreign.pid)
	}
	if pids, _ := filepath.Glob(filepath.Join(run, "*.pid")); len(pids) != 0 {
		t.Errorf("pid files left after stop: %v", pids)
	}
}

// snapshot copies what local.sh builds and reads into a temporary directory
// and returns it: the script builds the api from this copy, so that an edit
// to the checkout while the test runs does not count as a changed binary.
func snapshot(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	for _, p := range []string{"go.mod", "go.sum", "cmd/api", "cmd/loadgen", "internal", "migrations", "scripts/local.sh", "deploy/prometheus.yml", "deploy/rules",
		"deploy/jaeger/local.yaml"} {
		from, to := filepath.Join("..", p), filepath.Join(dst, p)
		fi, err := os.Stat(from)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			err = os.CopyFS(to, os.DirFS(from))
		} else if err = os.MkdirAll(filepath.Dir(to), 0o755); err == nil {
			var b []byte
			if b, err = os.ReadFile(from); err == nil {
				err = os.WriteFile(to, b, 0o644)
			}
		}
		if err != nil {
			t.Fatalf("copy %s: %v", p, err)
		}
	}
	return dst
}

// script runs the copy of local.sh in src with env and returns its output
// (stdout and stderr).
func script(t *testing.T, src string, env []string, arg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(src, "scripts", "local.sh"), arg)
	cmd.Env = env
	// On timeout, end the script's children too (go build, the seed).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second // a child holding the output open must not hang the test
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("local.sh %s: %v\n%s", arg, err, out)
	}
	t.Logf("local.sh %s (%v):\n%s", arg, time.Since(start).Round(time.Millisecond), out)
	return string(out)
}

// stopAll runs local.sh stop, then ends any recorded process that survived
// it, so that a failed test leaves nothing running.
func stopAll(t *testing.T, src string, env []string, run string) {
	var pids []int
	for _, f := range []string{"api", "loadgen", "jaeger", "prometheus", "redis-cache", "redis-lock1", "redis-lock2", "redis-lock3"} {
		if b, err := os.ReadFile(filepath.Join(run, f+".pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	cmd := exec.Command("bash", filepath.Join(src, "scripts", "local.sh"), "stop")
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("local.sh stop: %v\n%s", err, out)
	}
	for _, pid := range pids {
		if alive(pid) {
			args, _ := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
			if a := string(args); strings.HasPrefix(a, filepath.Join(run, "api")) || strings.HasPrefix(a, filepath.Join(run, "loadgen")) ||
				strings.Contains(a, "redis-server") || strings.Contains(a, "prometheus") || strings.Contains(a, "jaeger") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// environ is the test's environment without the settings of tracing that
// would change what local.sh does (a developer's own collector, say).
func environ() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "OTEL_EXPORTER_OTLP_ENDPOINT" || k == "TRACE_SAMPLE" || k == "JAEGER" || k == "JAEGER_BIN"
	})
}

// jaegerBinary returns the Jaeger binary make jaeger builds and whether it
// exists; without it, local.sh must start the stack without Jaeger. The
// first build takes minutes, so it is not part of go test (.ci/run builds
// it before make test).
func jaegerBinary(t *testing.T) (string, bool) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", ".tools", "bin", "jaeger"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Logf("no Jaeger binary at %s (make jaeger): checking the stack without it", bin)
		return bin, false
	}
	return bin, true
}

// jaegerServer is the Jaeger the script recorded.
type jaegerServer struct{ pid, otlpPort, queryPort int }

func (j jaegerServer) otlpURL() string  { return fmt.Sprintf("http://127.0.0.1:%d", j.otlpPort) }
func (j jaegerServer) queryURL() string { return fmt.Sprintf("http://127.0.0.1:%d", j.queryPort) }

// checkJaeger checks that the script recorded a Jaeger that runs, on ports
// other than Jaeger's defaults, whose query API answers, and (unless out is
// "") that the output tells its address; it returns it.
func checkJaeger(t *testing.T, run, out string) jaegerServer {
	t.Helper()
	j := jaegerServer{readInt(t, filepath.Join(run, "jaeger.pid")), readInt(t, filepath.Join(run, "jaeger-otlp.port")),
		readInt(t, filepath.Join(run, "jaeger-ui.port"))}
	if !alive(j.pid) {
		t.Fatalf("the recorded jaeger (pid %d) does not run", j.pid)
	}
	for _, p := range []int{j.otlpPort, j.queryPort} {
		if slices.Contains([]int{4317, 4318, 16685, 16686}, p) {
			t.Fatalf("jaeger recorded on its default port %d: want a free one", p)
		}
	}
	resp, err := http.Get(j.queryURL() + "/api/services")
	if err != nil {
		t.Fatalf("jaeger's query API: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/api/services: %s", j.queryURL(), resp.Status)
	}
	if out != "" && !strings.Contains(out, j.queryURL()) {
		t.Errorf("the output does not tell Jaeger's address %s:\n%s", j.queryURL(), out)
	}
	return j
}

// checkTraced sends the API a request with a sampled traceparent and waits
// for Jaeger to hold that trace, with spans of service stampede-api: the
// API exports its spans to this Jaeger.
func checkTraced(t *testing.T, addr string, j jaegerServer) {
	t.Helper()
	traceID := randomHex(t) + randomHex(t) + randomHex(t)[:8]
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/products/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("traceparent", "00-"+traceID+"-"+randomHex(t)+"abcd-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The SDK's batch processor exports every 5s by default; a busy machine
	// can take longer.
	var last string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		services, err := traceServices(j.queryURL(), traceID)
		if err == nil && slices.Contains(services, "stampede-api") {
			return
		}
		last = fmt.Sprint(services, err)
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("GET /v1/products/1 with a sampled traceparent (trace %s): no spans of stampede-api in Jaeger %s within a minute (last: %s): "+
		"the api does not export its traces there", traceID, j.queryURL(), last)
}

// traceServices returns the services of the spans Jaeger at base holds of
// trace id.
func traceServices(base, id string) ([]string, error) {
	resp, err := http.Get(base + "/api/traces/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/traces/%s: %s", id, resp.Status)
	}
	var tr struct {
		Data []struct {
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return nil, err
	}
	var services []string
	for _, d := range tr.Data {
		for _, p := range d.Processes {
			services = append(services, p.ServiceName)
		}
	}
	return services, nil
}

// checkPrometheus checks that the Prometheus the script recorded, if any
// (it is started when installed), runs with exemplar storage.
func checkPrometheus(t *testing.T, run string) {
	t.Helper()
	if _, err := exec.LookPath("prometheus"); err != nil {
		return
	}
	pid := readInt(t, filepath.Join(run, "prometheus.pid"))
	args, err := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Fatalf("the recorded prometheus (pid %d) does not run", pid)
	}
	if !slices.Contains(strings.Fields(string(args)), "--enable-feature=exemplar-storage") {
		t.Errorf("prometheus runs without --enable-feature=exemplar-storage: %s", args)
	}
}

// processEnv returns the environment of process pid, and false where it
// cannot be read (no /proc: not Linux).
func processEnv(t *testing.T, pid int) (map[string]string, bool) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Logf("not checking the environment of pid %d: %v", pid, err)
		return nil, false
	}
	env := map[string]string{}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env, true
}

// recorded returns the pid and port the script recorded for Redis name.
func recorded(t *testing.T, run, name string) server {
	t.Helper()
	return server{readInt(t, filepath.Join(run, "redis-"+name+".pid")), readInt(t, filepath.Join(run, "redis-"+name+".port"))}
}

// checkSameRedis checks that the script still records the Redis servers in
// want and that they run.
func checkSameRedis(t *testing.T, run string, want map[string]server) {
	t.Helper()
	for name, s := range want {
		if got := recorded(t, run, name); got != s {
			t.Errorf("redis %s: recorded %+v, want %+v (reused)", name, got, s)
		}
		if !alive(s.pid) {
			t.Errorf("redis %s (pid %d) no longer runs", name, s.pid)
		}
	}
}

// checkAPI checks that the recorded api runs and reports every Redis and
// Postgres healthy, and returns its pid.
func checkAPI(t *testing.T, run, addr string) int {
	t.Helper()
	pid := readInt(t, filepath.Join(run, "api.pid"))
	if !alive(pid) {
		t.Fatalf("the recorded api (pid %d) does not run", pid)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"postgres": "ok", "cache_redis": "ok", "lock_redis_1": "ok", "lock_redis_2": "ok", "lock_redis_3": "ok"}
	if health.Status != "ok" || !maps.Equal(health.Checks, want) {
		t.Fatalf("/health = %+v, want ok and %v", health, want)
	}
	return pid
}

// checkEnvFile checks the addresses the script recorded in RUN_DIR/env.
func checkEnvFile(t *testing.T, run string, want map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "env"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			got[k] = v
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env file: %s=%q, want %q\n%s", k, got[k], v, b)
		}
	}
}

// startRedis starts a redis-server of the test's own on port, ended at the
// end of the test.
func startRedis(t *testing.T, port int) server {
	t.Helper()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := server{cmd.Process.Pid, port}
	waitFor(t, "the other redis to answer", func() bool { return redisPid(port) == s.pid })
	return s
}

// redisPid returns the process id the Redis on 127.0.0.1:port reports, 0
// when none answers.
func redisPid(port int) int {
	info := redisInfo(port, "server")
	pid, _ := strconv.Atoi(info["process_id"])
	return pid
}

// connectedClients returns the number of clients of the Redis on
// 127.0.0.1:port.
func connectedClients(port int) int {
	n, _ := strconv.Atoi(redisInfo(port, "clients")["connected_clients"])
	return n
}

// redisInfo returns the fields of section of the Redis on 127.0.0.1:port's
// INFO, nil when none answers.
func redisInfo(port int, section string) map[string]string {
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// alive reports whether process pid runs; a zombie does not.
func alive(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && len(out) > 0 && !strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

// readInt returns the number in the file at path, which must exist.
func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("not recorded: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// randomHex returns 12 random hex digits.
func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// dropDatabase drops db, which the script creates, at the end of the test.
func dropDatabase(t *testing.T, db string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
		if err != nil {
			t.Errorf("drop database %s: %v", db, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", db, err)
		}
	})
}

// waitFor fails the test when cond does not hold within a minute: a bound
// on waiting for something that must happen, not on how fast it happens.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after a minute waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// walkReadme runs docs/running.md's "What to try without Docker" block (moved
// there from README.md) as a
// reader would after `set -a; . .run/env; set +a` (RUN_DIR/env here): each
// curl command with a "# <status>" comment, in order, in bash with the
// recorded addresses, must answer that status.
func walkReadme(t *testing.T, run string) {
	t.Helper()
	doc, err := os.ReadFile("../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n### What to try without Docker\n")
	if ok {
		_, section, ok = strings.Cut(section, "```sh\n")
	}
	if ok {
		section, _, ok = strings.Cut(section, "\n```")
	}
	if !ok {
		t.Fatal("docs/running.md has no sh block under ### What to try without Docker")
	}
	status := regexp.MustCompile(`\s+#\s*(\d{3})\b[^#]*$`)
	walked := 0
	for _, line := range strings.Split(strings.ReplaceAll(section, "\\\n", " "), "\n") {
		m := status.FindStringSubmatch(line)
		if !strings.HasPrefix(line, "curl ") || m == nil {
			continue
		}
		cmd := exec.Command("bash", "-c", `set -a; . "$1"; set +a; `+strings.TrimSuffix(line, m[0])+` -o /dev/null -w '%{http_code}'`,
			"walk", filepath.Join(run, "env"))
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != m[1] {
			t.Errorf("docs/running.md: %s\n  answered %q (%v), docs/running.md says %s", line, out, err, m[1])
		}
		walked++
	}
	if walked < 5 {
		t.Errorf("walked %d commands of docs/running.md, want the whole block", walked)
	}
}

// get returns the body of a GET of url, which must answer 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// checkScraped checks what the start banner says of Prometheus: what the
// script did (no "if installed" after starting it) and, when it started
// one, that the API was scraped before the banner, so that a query right
// after make run-local (README's) finds the API's metrics.
func checkScraped(t *testing.T, run, out string) {
	t.Helper()
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(strings.TrimSpace(l), "Prometheus ") {
			line = l
		}
	}
	if line == "" || strings.Contains(line, "if installed") {
		t.Errorf("the banner's Prometheus line does not say what start did: %q", line)
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		if !strings.Contains(line, "not installed") {
			t.Errorf("no prometheus installed, and the banner does not say so: %q", line)
		}
		return
	}
	if !strings.Contains(line, "started") || !strings.Contains(line, "has scraped the API") {
		t.Errorf("the banner does not say that Prometheus started and scraped the API: %q", line)
	}
	env := readEnv(t, run)
	body := get(t, env["PROMETHEUS_URL"]+"/api/v1/query?query=catalog_hottest_key_recomputes")
	if !strings.Contains(body, `"catalog_hottest_key_recomputes"`) {
		t.Errorf("right after start, Prometheus has no catalog_hottest_key_recomputes: %s", body)
	}
}

// readEnv returns the variables RUN_DIR/env records.
func readEnv(t *testing.T, run string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "env"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for l := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	return env
}

// docDir returns a directory whose .run is run (RUN_DIR), so that the docs'
// commands run as written: set -a; . .run/env; set +a.
func docDir(t *testing.T, run string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(run, filepath.Join(dir, ".run")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// docBash runs script in bash in dir, curl failing on an HTTP error
// (curl -f), within timeout; it returns the output and the error.
func docBash(dir, script string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", `curl() { command curl -f "$@"; }; `+script)
	cmd.Dir = dir
	cmd.Env = environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// codeSpans returns the inline code spans of markdown doc (a span may run
// over a line break, which becomes a space), fenced blocks left out.
func codeSpans(doc string) []string {
	var prose strings.Builder
	fenced := false
	for l := range strings.Lines(doc) {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			prose.WriteString(strings.TrimSpace(l) + " ")
		}
	}
	var spans []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose.String(), -1) {
		spans = append(spans, m[1])
	}
	return spans
}

// fencedBlock returns the n-th (from 0) sh block of markdown doc.
func fencedBlock(t *testing.T, doc string, n int) string {
	t.Helper()
	parts := strings.Split(doc, "```sh\n")
	if len(parts) <= n+1 {
		t.Fatalf("no sh block %d", n)
	}
	block, _, _ := strings.Cut(parts[n+1], "\n```")
	return block
}

// walkRunbooks runs docs/runbooks.md's commands as a reader under make
// run-local would, after its run-local block (set -a; . .run/env; set +a;
// API=http://$HTTP_ADDR): each line of "Three calls" and every inline
// command that starts with curl or redis-cli and uses $API, $REDIS_URL or
// $PROMETHEUS_URL must succeed (curl -f: an HTTP error fails). redis-cli
// --latency runs until stopped: it must print a measurement within 3 s.
func walkRunbooks(t *testing.T, run string) {
	t.Helper()
	b, err := os.ReadFile("../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	setup := fencedBlock(t, doc, 1)
	if !strings.Contains(setup, ". .run/env") {
		t.Fatalf("runbooks.md's second sh block is not the run-local one:\n%s", setup)
	}
	var cmds []string
	for l := range strings.Lines(fencedBlock(t, doc, 2)) {
		if c, _, _ := strings.Cut(l, "  #"); strings.HasPrefix(c, "curl ") {
			cmds = append(cmds, strings.TrimSpace(c))
		}
	}
	for _, c := range codeSpans(doc) {
		if (strings.HasPrefix(c, "curl ") || strings.HasPrefix(c, "redis-cli ")) && regexp.MustCompile(`\$(API|REDIS_URL|PROMETHEUS_URL)\b`).MatchString(c) &&
			!slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	dir := docDir(t, run)
	var redisChecks int
	for _, c := range cmds {
		redisCmd := strings.HasPrefix(c, "redis-cli ")
		if redisCmd {
			redisChecks++
		}
		if strings.Contains(c, "--latency") {
			out, _ := docBash(dir, setup+"\n"+c, 3*time.Second)
			// min, max, avg and samples: "min: ..." on a terminal, bare numbers otherwise.
			if !regexp.MustCompile(`min: |(?m)^\d+ \d+ [\d.]+ \d+$`).MatchString(out) {
				t.Errorf("runbooks.md: %s\n  printed no latency in 3 s: %q", c, out)
			}
			continue
		}
		out, err := docBash(dir, "set -e\n"+setup+"\n"+c, time.Minute)
		if err != nil || strings.TrimSpace(out) == "" || (redisCmd && strings.Contains(out, "ERR")) {
			t.Errorf("runbooks.md under run-local: %s\n  failed: %v\n%s", c, err, out)
		}
		if strings.Contains(c, " PING") && strings.TrimSpace(out) != "PONG" {
			t.Errorf("runbooks.md: %s answered %q, want PONG", c, out)
		}
	}
	if len(cmds) < 8 || redisChecks < 3 {
		t.Errorf("walked %d runbook commands (%d redis-cli): want the three calls and the checks of the cache Redis", len(cmds), redisChecks)
	}
}

// freezeCacheRedis runs docs/experiments/03-redis-outage.md's real outage,
// as written (set -a; . .run/env; set +a; redis-cli -u "$REDIS_URL" DEBUG
// SLEEP 30): it must succeed, the cache Redis must not answer while it
// sleeps, and the API must go on serving reads meanwhile.
func freezeCacheRedis(t *testing.T, run, httpAddr string) {
	t.Helper()
	b, err := os.ReadFile("../docs/experiments/03-redis-outage.md")
	if err != nil {
		t.Fatal(err)
	}
	var outage string
	for _, c := range codeSpans(string(b)) {
		if strings.Contains(c, "DEBUG SLEEP") {
			outage = c
		}
	}
	if !strings.Contains(outage, ". .run/env") || !strings.Contains(outage, `redis-cli -u "$REDIS_URL"`) {
		t.Fatalf("03-redis-outage.md has no run-local outage command (redis-cli -u \"$REDIS_URL\" DEBUG SLEEP after . .run/env): %q", outage)
	}
	cache := recorded(t, run, "cache")
	done := make(chan error, 1)
	var out string
	start := time.Now()
	go func() {
		var err error
		out, err = docBash(docDir(t, run), outage, 2*time.Minute)
		done <- err
	}()
	// Asleep: PING gets no answer (a real outage, not a refused command).
	waitFor(t, "the cache Redis to stop answering", func() bool {
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", cache.port), ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
		defer c.Close()
		return c.Ping(context.Background()).Err() != nil
	})
	for id := 1; id <= 5; id++ {
		get(t, fmt.Sprintf("http://%s/v1/products/%d", httpAddr, id))
	}
	if err := <-done; err != nil || strings.TrimSpace(out) != "OK" {
		t.Fatalf("03-redis-outage.md: %s\n  answered %q (%v), want OK", outage, out, err)
	}
	t.Logf("%s took %v", outage, time.Since(start).Round(time.Second))
	if n := redisPid(cache.port); n != cache.pid {
		t.Fatalf("after DEBUG SLEEP the cache Redis on %d is pid %d, want %d", cache.port, n, cache.pid)
	}
}
