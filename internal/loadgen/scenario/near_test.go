package scenario

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/loadgen/report/reporttest"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// nearClient returns, when on, a client of node with go-redis's client-side
// cache and its metrics on reg, as the API's -near-cache builds it; nil
// otherwise.
func nearClient(t *testing.T, on bool, node *testenv.RedisNode, reg prometheus.Registerer) redis.UniversalClient {
	t.Helper()
	if !on {
		return nil
	}
	opt := node.Options()
	opt.Protocol, opt.ContextTimeoutEnabled = 3, true
	cc := redis.ClientSideCacheConfig{MaxEntries: 1000, MaxStaleness: 2 * time.Second}
	opt.ClientSideCache, opt.ClientSideCacheConfig = redis.NewLocalCache(cc), &cc
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	if err := reg.Register(cachex.NearCacheCollector(c, "near")); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNearScenario runs near against two real APIs on one Redis, the second
// with the near cache, and checks from its summary.json that each phase ran
// on its side: the near side's reads are near hits and cost Redis a
// fraction of the commands per request the other side's do (counts, not
// times), and the report carries the comparison table.
func TestNearScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: two APIs on real Postgres and Redis, seconds of load")
	}
	node := testenv.Redis(t)
	off, _ := startTestAPI(t, testAPI{adminToken: "t", statsTTL: time.Second, redis: node})
	on, _ := startTestAPI(t, testAPI{adminToken: "t", statsTTL: time.Second, redis: node, near: true})
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-target", off, "-near-target", on, "-redis-url", node.URL(), "-admin-token", "t",
		"-rate", "100", "-phase-duration", "3s", "-cache-ttl", "1s", "-phases", "xfetch:1", "-metrics-addr", "",
		"-report-dir", dir, "near"}
	if err := runArgs(t.Context(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("stdout:\n%s", stdout.String())
	sum, err := ReadNearSummary(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Phases) != 2 || len(sum.Redis) != 2 || sum.Phases[0].Name != "off xfetch:1" || sum.Phases[1].Name != "on xfetch:1" {
		t.Fatalf("phases %+v, redis %+v: want off xfetch:1 then on xfetch:1", sum.Phases, sum.Redis)
	}
	offR, onR := sum.Redis[0], sum.Redis[1]
	if offR.NearHits != 0 || onR.NearHits == 0 || onR.NearHitShare < 0.5 {
		t.Errorf("near hits off %v, on %v (share %.3f): want none off and most reads on", offR.NearHits, onR.NearHits, onR.NearHitShare)
	}
	// Off, every read is at least a GET; on, most are served from memory.
	if offR.RedisCommandsPerRequest < 1 || onR.RedisCommandsPerRequest > offR.RedisCommandsPerRequest/2 {
		t.Errorf("Redis commands per request off %.2f, on %.2f: want at least 1 off and at most half of it on",
			offR.RedisCommandsPerRequest, onR.RedisCommandsPerRequest)
	}
	for _, p := range sum.Phases {
		if p.Requests == 0 || p.Errors != 0 {
			t.Errorf("phase %s: %d requests, %d errors", p.Name, p.Requests, p.Errors)
		}
	}
	rep, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), "Near cache off and on") || !strings.Contains(string(rep), "| on xfetch:1 |") {
		t.Errorf("report.md lacks the comparison:\n%s", rep)
	}
	reporttest.CheckReport(t, dir, "latency.png", "recomputes.png", "hit_ratio.png")
}

// TestNearRefusesSwappedTargets: a -near-target whose API has no near cache
// (the two swapped, or NEAR_CACHE unset) is an error naming the flag, not
// a comparison of two equal sides.
func TestNearRefusesSwappedTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: two APIs on real Postgres and Redis")
	}
	node := testenv.Redis(t)
	off, _ := startTestAPI(t, testAPI{adminToken: "t", redis: node})
	on, _ := startTestAPI(t, testAPI{adminToken: "t", redis: node, near: true})
	args := []string{"-target", on, "-near-target", off, "-redis-url", node.URL(), "-admin-token", "t",
		"-rate", "10", "-phase-duration", "3s", "-cache-ttl", "1s", "-phases", "xfetch:1", "-metrics-addr", "",
		"-report-dir", t.TempDir(), "near"}
	var stdout, stderr bytes.Buffer
	err := runArgs(t.Context(), args, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-near-target") {
		t.Errorf("swapped targets: %v, want an error naming -near-target", err)
	}
}

// TestNearFlags: near's own flags refuse what is not loopback (unless
// -allow-remote) before anything connects, and a run without them says
// which to set instead of comparing nothing.
func TestNearFlags(t *testing.T) {
	base := []string{"-target", "http://127.0.0.1:1", "-admin-token", "t", "-metrics-addr", "", "-phase-duration", "30s"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-near-target", "http://192.0.2.1:8081", "-redis-url", "redis://127.0.0.1:6379"}, "-near-target"},
		{[]string{"-near-target", "http://127.0.0.1:8081", "-redis-url", "redis://192.0.2.1:6379"}, "-redis-url"},
		{[]string{"-near-target", "http://127.0.0.1:8081", "-redis-url", "not a url"}, "-redis-url"},
		{[]string{"-target", "http://127.0.0.1:1,http://127.0.0.1:2", "-near-target", "http://127.0.0.1:8081", "-redis-url", "redis://127.0.0.1:6379"}, "one -target"},
	} {
		args := append(append(append([]string{}, base...), tc.args...), "near")
		_, _, err := ParseArgs(args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	err := runArgs(t.Context(), append(base, "near"), io.Discard, io.Discard)
	if !errors.Is(err, errNearUnset) {
		t.Errorf("near without -near-target and -redis-url: %v, want errNearUnset", err)
	}
}
