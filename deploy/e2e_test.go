package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

	yaml "go.yaml.in/yaml/v3"

	"github.com/stampede-lab/stampede/dashboards"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// e2eToken is the admin token of the end-to-end stack.
const e2eToken = "e2e-admin"

// TestEndToEnd runs the demo's stack as real processes on loopback:
// Postgres, four Redis (one for the caches, three for Redlock), two api
// processes, loadgen's demo mix (stampede bursts, browsing, reservations),
// and Debian's prometheus scraping them with deploy/prometheus.yml's jobs
// and alert rules. The scenario has three windows (see e2eWindows): a
// healthy one under xfetch, a stampede one with the bursts under ttl, and a
// faults one (cache Redis down, reservations paused past the lock TTL,
// database latency, one api hung by SIGSTOP). It checks through
// Prometheus's HTTP API that every dashboard panel's queries return data and
// never NaN, that each alert reaches its expected state in its window and
// that none is pending or firing in the healthy one, that every metric the
// panels select is registered by a real process, and that docs/metrics.md
// lists exactly the metrics the processes export.
//
// It runs alone, before the package's parallel tests: with the trace test's
// stack and the mutation test's promtool runs beside it, a starved API's
// cache calls passed their timeout in the healthy window and
// StampedeCacheRedisErrors went pending (a fresh-clone CI run, 2026-12-02).
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: builds and runs the api, loadgen and prometheus")
	}
	root := repoRoot(t)
	promBin := prometheusBin(t)
	api, loadgen := buildBinaries(t, root)

	dbURL := testenv.PostgresURL(t)
	nodes := testenv.RedisNodes(t, 4)
	var lockURLs []string
	for i := 1; i < 4; i++ {
		lockURLs = append(lockURLs, nodes[i].URL())
	}
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+nodes[0].URL(),
		"LOCK_REDIS_URLS="+strings.Join(lockURLs, ","), "ADMIN_TOKEN="+e2eToken, "MIGRATE=false", "LOG_LEVEL=warn",
		// 1s, not 100ms: beside the other packages' tests on two cores, a
		// starved API's cache calls missed 100ms in the healthy window and
		// StampedeCacheRedisErrors went pending. The faults window's cache
		// outage fails calls at once, whatever the timeout.
		"CACHE_TIMEOUT=1s")
	seed := execIn(api, env, "seed", "-scale", "0.05")
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("api seed: %v\n%s", err, out)
	}

	apis := []string{testenv.FreeAddr(t), testenv.FreeAddr(t)}
	var procs []*process
	for i, addr := range apis {
		e := append(env, "HTTP_ADDR="+addr)
		if i == 1 {
			e = append(e, "NEAR_CACHE=true") // one instance with the near cache, so its metrics are checked too
		}
		procs = append(procs, startProcess(t, fmt.Sprintf("api-%d", i+1), api, nil, e))
	}
	for _, addr := range apis {
		waitHTTP(t, "http://"+addr+"/readyz", time.Minute)
	}
	lgAddr := testenv.FreeAddr(t)
	demo := func(name, phases string, burstEvery, burstFor time.Duration, burstRate int) *process {
		p := startProcess(t, name, loadgen, []string{
			"-target", "http://" + apis[0] + ",http://" + apis[1], "-metrics-addr", lgAddr, "-admin-token", e2eToken,
			"-duration", "5m", "-rate", "40", "-products", "1250", "-skus", "1,2,3", "-demo-reserve-rate", "10",
			"-burst-every", burstEvery.String(), "-burst-for", burstFor.String(), "-burst-rate", strconv.Itoa(burstRate),
			"-phases", phases, "demo",
		}, env)
		waitHTTP(t, "http://"+lgAddr+"/metrics", time.Minute)
		return p
	}

	promAddr := testenv.FreeAddr(t)
	cfg := prometheusConfig(t, root, map[string][]string{"api": apis, "loadgen": {lgAddr}})
	startProcess(t, "prometheus", promBin, []string{
		"--config.file=" + cfg, "--storage.tsdb.path=" + t.TempDir(), "--web.listen-address=" + promAddr,
		"--enable-feature=exemplar-storage", // as compose and run-local start it
	}, nil)
	prom := "http://" + promAddr
	waitHTTP(t, prom+"/-/ready", time.Minute)

	// The healthy window: the demo with xfetch bursts, after a warm-up that
	// fills the caches.
	w := e2eWindows{}
	healthy := demo("loadgen-xfetch", "xfetch:1", 8*time.Second, 4*time.Second, 60)
	time.Sleep(e2eWarmUp)
	w.healthy.from = time.Now()
	time.Sleep(25 * time.Second)
	w.healthy.to = time.Now()

	// The stampede window: one long burst under ttl on the hot categories.
	// The test's catalog is small (scale 0.05), so its category aggregates
	// take about 2 ms; 400 ms of database latency gives them the cost they
	// have on a loaded demo, which is what makes readers overlap at an expiry.
	healthy.stop()
	w.stampede.from = time.Now()
	setFaults(t, apis, map[string]int{"db_latency_ms": 400, "db_latency_percent": 100})
	stampede := demo("loadgen-ttl", "ttl", 45*time.Second, 45*time.Second, 60)
	time.Sleep(40 * time.Second)
	w.stampede.to = time.Now()
	stampede.stop()
	demo("loadgen-faults", "xfetch:1", 10*time.Minute, time.Second, 1) // no burst in the rest of the run

	// The faults window: the cache's Redis unreachable, reservations paused
	// past the lock TTL and every query 1.5 s slower; then two of the three
	// lock masters and api-2 hung (SIGSTOP): reservations find no quorum
	// (503) and api-2's scrapes time out.
	w.faults.from = time.Now()
	setFaults(t, apis, map[string]int{"cache_redis_down_percent": 100, "reservation_pause_ms": 6000,
		"reservation_pause_percent": 50, "db_latency_ms": 1500, "db_latency_percent": 100})
	time.Sleep(20 * time.Second)
	nodes[1].Pause()
	nodes[2].Pause()
	procs[1].signal(syscall.SIGSTOP)
	time.Sleep(25 * time.Second)
	procs[1].signal(syscall.SIGCONT)
	nodes[1].Resume()
	nodes[2].Resume()
	setFaults(t, apis, map[string]int{})
	w.faults.to = time.Now()

	// Recovery, with a pause of the demo (the dashboards mark it).
	lgPost(t, "http://"+lgAddr+"/demo/pause")
	time.Sleep(4 * time.Second)
	lgPost(t, "http://"+lgAddr+"/demo/resume")
	time.Sleep(3 * time.Second)
	begin, end := w.healthy.from, time.Now()

	queries, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("every panel returns data, never NaN", func(t *testing.T) {
		var empty, nan []string
		for _, q := range queries {
			series := rangeQuery(t, prom, dashboards.Substitute(q.Expr), begin, end)
			for _, s := range series {
				if n := s.nonNumbers(); n > 0 {
					nan = append(nan, fmt.Sprintf("%s / %s %v: %d of %d points NaN or infinite: %s", q.Dashboard, q.Panel, s.Metric, n, len(s.Values), q.Expr))
				}
			}
			switch {
			case len(series) == 0:
				empty = append(empty, fmt.Sprintf("%s / %s (needs %q): %s", q.Dashboard, q.Panel, q.Needs, q.Expr))
			case q.Needs == "" && !strings.HasPrefix(q.Panel, "annotation: ") &&
				len(rangeQuery(t, prom, dashboards.Substitute(q.Expr), w.healthy.from, w.healthy.to)) == 0:
				empty = append(empty, fmt.Sprintf("%s / %s (in the healthy window): %s", q.Dashboard, q.Panel, q.Expr))
			}
		}
		if len(empty) > 0 {
			t.Errorf("%d of %d panel queries returned no data:\n%s", len(empty), len(queries), strings.Join(empty, "\n"))
		}
		if len(nan) > 0 {
			t.Errorf("%d panel series have NaN or infinite points:\n%s", len(nan), strings.Join(nan, "\n"))
		}
		t.Logf("%d panel queries evaluated over %s", len(queries), end.Sub(begin).Round(time.Second))
	})

	t.Run("alerts reach their expected states", func(t *testing.T) {
		checkAlerts(t, root, prom, w)
	})

	t.Run("the stampede window recomputes the hottest key more than xfetch", func(t *testing.T) {
		checkHottestKey(t, prom, w)
	})

	t.Run("the demo figures tell the same story", func(t *testing.T) {
		checkDemoFigures(t, root, prom, w)
	})

	exported := map[string]bool{}
	for _, target := range append(slices.Clone(apis), lgAddr) {
		for name := range metricFamilies(t, "http://"+target+"/metrics") {
			exported[name] = true
		}
	}
	t.Run("panels select registered metrics", func(t *testing.T) {
		for _, q := range queries {
			names, err := dashboards.MetricNames(q.Expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if n != "up" && n != "ALERTS" && !exported[familyOf(n, exported)] {
					t.Errorf("%s / %s selects %s, which neither the api nor loadgen registers", q.Dashboard, q.Panel, n)
				}
			}
		}
	})

	t.Run("docs/metrics.md lists exactly the exported metrics", func(t *testing.T) {
		documented := documentedMetrics(t, filepath.Join(root, "docs", "metrics.md"))
		for name := range exported {
			if isRuntimeMetric(name) {
				continue
			}
			if !documented[name] {
				t.Errorf("%s is exported but not documented in docs/metrics.md", name)
			}
		}
		for name := range documented {
			if !exported[name] {
				t.Errorf("docs/metrics.md documents %s, which no process exports", name)
			}
		}
	})
}

// isRuntimeMetric reports whether name is one of client_golang's Go and
// process collectors' metrics, which docs/metrics.md describes as groups.
func isRuntimeMetric(name string) bool {
	return strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_")
}

// familyOf maps a series name (a histogram's _bucket, _sum or _count) to
// its metric family in exported, or returns it unchanged.
func familyOf(name string, exported map[string]bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return base
		}
	}
	return name
}

// metricFamilies scrapes url and returns the metric families its # TYPE
// lines declare, with their types.
func metricFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no metrics", url)
	}
	return out
}

// documentedRow matches a metric row of docs/metrics.md's tables:
// | `name` | type | ...
var documentedRow = regexp.MustCompile("^\\|\\s*`([a-z_:][a-z0-9_:]*)`\\s*\\|")

// documentedMetrics returns the metric names of docs/metrics.md's table rows.
func documentedMetrics(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := documentedRow.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no metric rows", path)
	}
	return out
}

// prometheusConfig writes a copy of deploy/prometheus.yml whose jobs scrape
// targets (job -> host:port list) every second, with the alert rules from
// the repository, and returns its path.
func prometheusConfig(t *testing.T, root string, targets map[string][]string) string {
	t.Helper()
	var cfg map[string]any
	readYAML(t, filepath.Join(root, "deploy", "prometheus.yml"), &cfg)
	cfg["global"] = map[string]any{"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"}
	cfg["rule_files"] = []string{filepath.Join(root, rulesFile)}
	jobs, _ := cfg["scrape_configs"].([]any)
	seen := 0
	for _, j := range jobs {
		job := j.(map[string]any)
		name, _ := job["job_name"].(string)
		ts, ok := targets[name]
		if !ok {
			t.Fatalf("deploy/prometheus.yml has a job %q the test does not run", name)
		}
		job["static_configs"] = []any{map[string]any{"targets": ts}}
		seen++
	}
	if seen != len(targets) {
		t.Fatalf("deploy/prometheus.yml has %d jobs, want %d (%v)", seen, len(targets), targets)
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// series is one series of a range query's result.
type series struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"` // [unix seconds, "value"]
}

// nonNumbers counts the points of s that are NaN or infinite.
func (s series) nonNumbers() int {
	n := 0
	for _, v := range s.Values {
		if x, _ := v[1].(string); x == "NaN" || x == "+Inf" || x == "-Inf" {
			n++
		}
	}
	return n
}

// rangeQuery evaluates expr over [from, to] every 2s through Prometheus's
// HTTP API and returns the series with at least one point.
func rangeQuery(t *testing.T, prom, expr string, from, to time.Time) []series {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {unix(from)}, "end": {unix(to)}, "step": {"2"}}
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []series `json:"result"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/query_range?"+q.Encode(), &res)
	if res.Status != "success" {
		t.Fatalf("query %q: %s", expr, res.Error)
	}
	return res.Data.Result
}

func unix(t time.Time) string { return fmt.Sprintf("%.3f", float64(t.UnixMilli())/1000) }

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// setFaults sets every api's fault knobs (knobs left out are off).
func setFaults(t *testing.T, apis []string, knobs map[string]int) {
	t.Helper()
	b, _ := json.Marshal(knobs)
	for _, addr := range apis {
		req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/admin/faults", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+e2eToken)
		req.Header.Set("Content-Type", "application/json")
		expectOK(t, req)
	}
}

// lgPost posts to one of loadgen's demo controls.
func lgPost(t *testing.T, url string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	expectOK(t, req)
}

// expectOK sends req and fails the test unless it answers 200.
func expectOK(t *testing.T, req *http.Request) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", req.Method, req.URL, resp.Status)
	}
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %v (last error %v)", url, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// process is a process the test started.
type process struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// signal sends sig to the process.
func (p *process) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
}

// stop ends the process with SIGTERM, then SIGKILL after 10s; it is a no-op
// once the process has ended.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startProcess starts bin with args and env (nil: the test's), its output
// in a log file that is printed when the test fails, and stops it when the
// test ends.
func startProcess(t *testing.T, name, bin string, args, env []string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Killed with the test, should it die before its cleanups run (a
	// -timeout panic): a leftover api holds Postgres connections.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{t: t, name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			if len(out) > 4000 {
				out = out[len(out)-4000:]
			}
			t.Logf("--- %s log (tail) ---\n%s", name, out)
		}
	})
	return p
}

// checkHottestKey compares the panel "Recomputes of the hottest key per
// TTL window" (catalog_hottest_key_recomputes, the highest of the
// instances) for category_stats in the stampede window (ttl) with the
// healthy one (xfetch): the ttl burst must read clearly above. Under xfetch
// a key is refreshed about once per window; as the refresh comes a little
// before expiry, a clock-aligned window now and then holds two. So the
// stampede must reach at least two more than the healthy window's highest.
func checkHottestKey(t *testing.T, prom string, w e2eWindows) {
	t.Helper()
	expr := `max(catalog_hottest_key_recomputes{cache="category_stats"})`
	peak := func(from, to time.Time) float64 {
		top := 0.0
		for _, s := range rangeQuery(t, prom, expr, from, to) {
			for _, v := range s.Values {
				x, _ := v[1].(string)
				if f, err := strconv.ParseFloat(x, 64); err == nil && f > top {
					top = f
				}
			}
		}
		return top
	}
	healthy, stampede := peak(w.healthy.from, w.healthy.to), peak(w.stampede.from, w.stampede.to)
	t.Logf("category_stats hottest key recomputes per TTL window: at most %g under xfetch, %g in the ttl stampede", healthy, stampede)
	if healthy < 1 || stampede < healthy+2 {
		t.Errorf("hottest key recomputes per TTL window: %g in the stampede window, %g in the healthy one; want the stampede at least 2 above a healthy window that recomputed", stampede, healthy)
	}
}
