package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"github.com/jackc/pgx/v5"

	"github.com/stampede-lab/stampede/internal/catalog"
	"github.com/stampede-lab/stampede/internal/testenv"
)

func TestParseConfig(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": ":9999", "LOCK_REDIS_URLS": "redis://a:1, redis://b:2 ,redis://c:3", "LOG_FORMAT": "json",
		"RESERVATION_MODE": "lock", "HOLD_TTL": "90s", "SWEEP_EVERY": "1s"}
	cmd, c, err := parseConfig([]string{"serve", "-admin-token", "t"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cmd != "serve" || c.httpAddr != ":9999" || len(c.lockRedisURLs) != 3 || c.lockRedisURLs[1] != "redis://b:2" || !c.logJSON || c.adminToken != "t" ||
		c.mode != catalog.ModeLock || c.holdTTL != 90*time.Second || c.sweepEvery != time.Second ||
		c.pendingAge != catalog.DefaultPendingAge || c.flaws != (catalog.Flaws{}) {
		t.Fatalf("parsed %q %+v", cmd, c)
	}
	for _, bad := range [][]string{{"explode"}, {"-log-level", "loud"}, {"-log-format", "xml"}, {"serve", "extra"},
		{"-reservation-mode", "Fenced"}, {"-hold-ttl", "1ms"}, {"-hold-ttl", "soon"}, {"-sweep-every", "0s"}, {"-pending-age", "10ms"}, {"-flaws", "give-first,typo"}} {
		if _, _, err := parseConfig(bad, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("parseConfig(%q) accepted", bad)
		}
	}
}

// TestRunEndToEnd builds the api, seeds a database through it, serves on a
// free port, and sends SIGTERM while slow requests (paused reservations
// holding their locks) are in flight: they complete, the process exits 0,
// and no lock is left in Redis.
func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api")
	}
	dbURL := testenv.PostgresURL(t)
	node := testenv.Redis(t)
	bin, api, stderr, base := startAPI(t, dbURL, node.URL())
	waitFor(t, "/readyz", time.Minute, func() bool { return get(base+"/readyz") == http.StatusOK })
	if code := get(base + "/v1/categories/1/stats"); code != http.StatusOK {
		t.Fatalf("stats: %d", code)
	}
	// The container healthcheck: 0 against the ready server, non-zero
	// against a path that is not 200.
	if out, err := exec.Command(bin, "healthcheck", "-url", base+"/readyz").CombinedOutput(); err != nil {
		t.Fatalf("healthcheck of a ready api: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "healthcheck", "-url", base+"/nope").CombinedOutput(); err == nil || !strings.Contains(string(out), "404") {
		t.Fatalf("healthcheck of a 404 passed or said nothing useful: %v\n%s", err, out)
	}

	// Slow requests: every reservation pauses 1s inside its lock.
	send(t, http.MethodPut, base+"/admin/faults", `{"reservation_pause_ms": 1000, "reservation_pause_percent": 100}`, "t0k", http.StatusOK)
	products := inStock(t, dbURL, 4)
	var wg sync.WaitGroup
	codes := make([]int, len(products))
	for i := range codes {
		wg.Go(func() {
			body := fmt.Sprintf(`{"product_id": %d, "quantity": 1, "idempotency_key": "drain-%d"}`, products[i], i)
			codes[i] = post(base+"/v1/reservations", body)
		})
	}
	rdb := node.Client()
	waitFor(t, "the reservations to hold their locks", time.Minute, func() bool {
		keys, _ := rdb.Keys(context.Background(), "{lockx:inventory:*}").Result()
		return len(keys) == len(codes)
	})
	if err := api.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := api.Wait(); err != nil {
		t.Fatalf("api exited with %v\n%s", err, stderr.String())
	}
	for i, c := range codes {
		if c != http.StatusCreated {
			t.Errorf("reservation %d in flight at SIGTERM answered %d, want 201", i, c)
		}
	}
	if keys, _ := rdb.Keys(context.Background(), "{lockx:inventory:*}").Result(); len(keys) != 0 {
		t.Fatalf("locks left in Redis after shutdown: %v", keys)
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Fatalf("no clean stop in the log:\n%s", stderr.String())
	}
}

// startAPI builds the api, seeds the database at dbURL (scale 0.02) and
// starts the api on a free port with redisURL for its caches and lock (admin
// token t0k) and extraEnv. It returns the binary, the running command (killed at the end
// of the test), its stderr and its base URL.
func startAPI(t *testing.T, dbURL, redisURL string, extraEnv ...string) (bin string, api *exec.Cmd, stderr *strings.Builder, base string) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), "api")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "LOCK_REDIS_URLS=", "ADMIN_TOKEN=t0k", "HTTP_ADDR=127.0.0.1:0")
	seedCmd := exec.Command(bin, "seed", "-scale", "0.02")
	seedCmd.Env = env
	if out, err := seedCmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "500 products") {
		t.Fatalf("api seed: %v\n%s", err, out)
	}
	api = exec.Command(bin)
	api.Env = append(env, extraEnv...)
	stdout, err := api.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &strings.Builder{}
	api.Stderr = stderr
	if err := api.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Process.Kill(); _ = api.Wait() })
	return bin, api, stderr, "http://" + listenAddr(t, stdout)
}

// inStock returns n products that have stock to reserve.
func inStock(t *testing.T, dbURL string, n int) []int64 {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), "SELECT product_id FROM inventory WHERE stock > 0 ORDER BY product_id LIMIT $1", n)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != n {
		t.Fatalf("products in stock: %v %v", ids, err)
	}
	return ids
}

var listenRE = regexp.MustCompile(`listening on (\S+)`)

func listenAddr(t *testing.T, r io.Reader) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case a := <-found:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the api never said where it listens")
		return ""
	}
}

func get(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func post(url, body string) int {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func send(t *testing.T, method, url, body, token string, want int) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		var p map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&p)
		t.Fatalf("%s %s = %d %v, want %d", method, url, resp.StatusCode, p, want)
	}
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With the caches' Redis (and here the lock's) unreachable, the API is
// still ready and serves reads; /health says what is down.
func TestReadyWithoutRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "redis://" + l.Addr().String() // nothing listens once closed
	_ = l.Close()
	_, _, _, base := startAPI(t, testenv.PostgresURL(t), dead)
	waitFor(t, "/readyz with Redis down", time.Minute, func() bool { return get(base+"/readyz") == http.StatusOK })
	if code := get(base + "/v1/categories/1/stats"); code != http.StatusOK {
		t.Fatalf("stats with Redis down: %d, want 200 (served without the cache)", code)
	}
	resp, err := http.Get(base + "/health")
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
	if health.Status != "degraded" || health.Checks["cache_redis"] != "unavailable" || health.Checks["lock_redis_1"] != "unavailable" || health.Checks["postgres"] != "ok" {
		t.Fatalf("/health = %+v", health)
	}
}

// TestTraceBackendDownOrHung: with every request traced, a trace backend
// that refuses connections, or accepts them and never answers (a hung
// Jaeger), costs the API no request, and SIGTERM still ends it: the
// exporter's calls are bounded, and so is the flush at shutdown. Failed
// exports are logged as JSON lines like the rest (LOG_FORMAT=json).
func TestTraceBackendDownOrHung(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api")
	}
	dbURL := testenv.PostgresURL(t)
	node := testenv.Redis(t)
	hung, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel does), never reads or answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hung.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := closed.Addr().String()
	_ = closed.Close() // nothing listens there any more
	for name, addr := range map[string]string{"hung": hung.Addr().String(), "down": dead} {
		t.Run(name, func(t *testing.T) {
			_, api, stderr, base := startAPI(t, dbURL, node.URL(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+addr, "TRACE_SAMPLE=1", "LOG_FORMAT=json")
			waitFor(t, "/readyz", time.Minute, func() bool { return get(base+"/readyz") == http.StatusOK })
			for i := range 200 {
				if code := get(base + "/v1/categories/" + strconv.Itoa(i%10+1) + "/stats"); code != http.StatusOK {
					t.Fatalf("request %d with the trace backend %s: %d", i, name, code)
				}
			}
			if err := api.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- api.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("api exited with %v\n%s", err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("api still running 30s after SIGTERM with the trace backend %s", name)
			}
			failed := 0
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Errorf("stderr line is not JSON: %q", line)
				}
				if rec["msg"] == "trace export failed" {
					failed++
				}
			}
			if failed == 0 {
				t.Errorf("no trace export failed line with the trace backend %s:\n%s", name, stderr.String())
			}
		})
	}
}
