package testenv

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// PrometheusFrom starts a private Prometheus (the Debian prometheus and
// promtool on PATH) whose storage holds the series of openMetrics (text in
// the OpenMetrics format ending "# EOF", backfilled with promtool tsdb
// create-blocks-from openmetrics) and returns its base URL once it is
// ready. It scrapes nothing; it is killed when the test ends.
func PrometheusFrom(tb TB, openMetrics []byte) string {
	tb.Helper()
	skipShort(tb, "Prometheus")
	prom, err1 := exec.LookPath("prometheus")
	promtool, err2 := exec.LookPath("promtool")
	if err1 != nil || err2 != nil {
		missing(tb, "prometheus and promtool", "Install them: apt-get install prometheus (Debian).", []string{"prometheus and promtool on PATH"})
	}
	dir := tb.TempDir()
	in, data := filepath.Join(dir, "in.om"), filepath.Join(dir, "data")
	if err := os.WriteFile(in, openMetrics, 0o644); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", in, data).CombinedOutput(); err != nil {
		tb.Fatalf("testenv: promtool tsdb create-blocks-from: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 5s\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	logFile := filepath.Join(dir, "prometheus.log")
	logs, err := os.Create(logFile)
	if err != nil {
		tb.Fatal(err)
	}
	addr := FreeAddr(tb)
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		logs.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logs.Close()
	})
	base := "http://" + addr
	waitReady(tb, base+"/-/ready", logFile)
	return base
}

// waitReady waits, up to a minute, for url to answer 200.
func waitReady(tb TB, url, logFile string) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	logs, _ := os.ReadFile(logFile)
	tb.Fatalf("testenv: prometheus not ready at %s within a minute:\n%s", url, logs)
}
