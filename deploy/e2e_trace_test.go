package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/report"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// statsRoute is the route of the stampede's reads.
const statsRoute = "/v1/categories/{id}/stats"

// TestTraceOfAStampede runs the api with tracing on against a real Jaeger
// (built from its Go module by make jaeger), real Redis, Postgres and
// Prometheus (with exemplar storage), and drives a ttl stampede with the
// load generator, whose requests carry sampled traceparents. It checks that
// the load generator's report names the slowest requests' traces and that
// Jaeger returns them; that one of them is a request that waited for a
// recompute: the server span, cachex.get (a miss), cachex.recompute under
// it and a Postgres query span under that; and that an exemplar from
// Prometheus's exemplar query is a trace Jaeger has.
func TestTraceOfAStampede(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: builds and runs the api, loadgen, jaeger and prometheus")
	}
	t.Parallel()
	root := repoRoot(t)
	jaeger := jaegerBin(t, root)
	promBin := prometheusBin(t)
	api, lg := buildBinaries(t, root)

	dbURL := testenv.PostgresURL(t)
	node := testenv.RedisNodes(t, 1)[0]
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+node.URL(), "ADMIN_TOKEN="+e2eToken, "MIGRATE=false", "LOG_LEVEL=warn")
	seed := execIn(api, env, "seed", "-scale", "0.05")
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("api seed: %v\n%s", err, out)
	}

	otlpAddr, queryAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	startProcess(t, "jaeger", jaeger, []string{
		"--config=file:" + filepath.Join(root, jaegerLocalConfig),
		"--set=receivers.otlp.protocols.http.endpoint=" + otlpAddr,
		"--set=extensions.jaeger_query.http.endpoint=" + queryAddr,
	}, nil)
	query := "http://" + queryAddr
	waitHTTP(t, query+"/api/services", time.Minute)

	apiAddr := testenv.FreeAddr(t)
	// TRACE_SAMPLE=0: only the load generator's sampled requests are traced,
	// so every kept trace is one it can name.
	startProcess(t, "api", api, nil, append(env, "HTTP_ADDR="+apiAddr, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+otlpAddr, "TRACE_SAMPLE=0"))
	waitHTTP(t, "http://"+apiAddr+"/readyz", time.Minute)

	promAddr := testenv.FreeAddr(t)
	promCfg := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(promCfg, []byte("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: api\n    static_configs:\n      - targets: ['"+apiAddr+"']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, "prometheus", promBin, []string{
		"--config.file=" + promCfg, "--storage.tsdb.path=" + t.TempDir(), "--web.listen-address=" + promAddr,
		"--enable-feature=exemplar-storage",
	}, nil)
	prom := "http://" + promAddr
	waitHTTP(t, prom+"/-/ready", time.Minute)

	// A ttl stampede on three hot categories whose aggregate takes 300 ms
	// (injected database latency, as on a loaded demo): every reader that
	// finds the entry expired recomputes it.
	setFaults(t, []string{apiAddr}, map[string]int{"db_latency_ms": 300, "db_latency_percent": 100})
	reportDir := t.TempDir()
	began := time.Now()
	run := execIn(lg, env, "-target", "http://"+apiAddr, "-admin-token", e2eToken, "-rate", "60", "-phases", "ttl",
		"-phase-duration", "12s", "-cache-ttl", "10s", "-force", "-jaeger-url", query, "-report-dir", reportDir, "stampede")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("loadgen stampede: %v\n%s", err, out)
	}
	setFaults(t, []string{apiAddr}, map[string]int{})

	var sum struct {
		JaegerURL     string `json:"jaeger_url"`
		SlowestTraces []struct {
			Phase    string                `json:"phase"`
			Requests []loadgen.SlowRequest `json:"requests"`
			Spans    []report.TraceSpan    `json:"spans"`
			Warning  string                `json:"warning"`
		} `json:"slowest_traces"`
	}
	readJSON(t, filepath.Join(reportDir, "summary.json"), &sum)
	if len(sum.SlowestTraces) != 1 || sum.SlowestTraces[0].Phase != "ttl" || len(sum.SlowestTraces[0].Requests) == 0 {
		t.Fatalf("summary.json slowest_traces = %+v, want the ttl phase's slowest requests", sum.SlowestTraces)
	}
	ttl := sum.SlowestTraces[0]
	if ttl.Warning != "" || len(ttl.Spans) == 0 {
		t.Fatalf("the load generator did not draw the slowest trace: warning %q, %d spans", ttl.Warning, len(ttl.Spans))
	}
	if _, err := os.Stat(filepath.Join(reportDir, "trace-ttl.png")); err != nil {
		t.Fatal(err)
	}

	t.Run("a slow request's trace shows the recompute it waited for and its query", func(t *testing.T) {
		var found bool
		for _, r := range ttl.Requests {
			spans := jaegerTrace(t, query, r.TraceID)
			if len(spans) == 0 {
				t.Errorf("Jaeger has no trace %s (%.0f ms)", r.TraceID, r.LatencyMs)
				continue
			}
			if spans.waitedForARecompute(r.SpanID) {
				found = true
			}
		}
		if !found {
			t.Fatalf("none of the %d slowest requests' traces has server span > cachex.get (miss) > cachex.recompute > a query span", len(ttl.Requests))
		}
	})

	t.Run("an exemplar from Prometheus is a trace in Jaeger", func(t *testing.T) {
		var ids []string
		deadline := time.Now().Add(time.Minute)
		for len(ids) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Second)
			ids = exemplarTraceIDs(t, prom, `http_request_duration_seconds_bucket{route="`+statsRoute+`"}`, began, time.Now())
		}
		if len(ids) == 0 {
			t.Fatal("Prometheus stored no exemplar for http_request_duration_seconds")
		}
		slices.Sort(ids)
		id := ids[len(ids)-1]
		spans := jaegerTrace(t, query, id)
		if len(spans) == 0 {
			t.Fatalf("exemplar trace %s: not in Jaeger", id)
		}
		if !slices.ContainsFunc(spans, func(s jaegerSpan) bool { return s.OperationName == "GET "+statsRoute }) {
			t.Fatalf("exemplar trace %s has no GET %s span: %v", id, statsRoute, spans.names())
		}
	})
}

// jaegerSpan is the part of a span in Jaeger's query API the test reads.
type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

type jaegerSpans []jaegerSpan

// jaegerTrace reads trace id from Jaeger's query API until it holds the
// api's server span for statsRoute, which ends after all its children: the
// api exports in batches, so a trace arrives in parts. It returns what
// Jaeger last had (nil for nothing) if that takes over a minute.
func jaegerTrace(t *testing.T, jaeger, id string) jaegerSpans {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(jaeger + "/api/traces/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data []struct {
				Spans jaegerSpans `json:"spans"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		var spans jaegerSpans
		if err == nil && resp.StatusCode == http.StatusOK && len(body.Data) == 1 {
			spans = body.Data[0].Spans
		}
		if slices.ContainsFunc(spans, func(s jaegerSpan) bool { return s.OperationName == "GET "+statsRoute }) || time.Now().After(deadline) {
			return spans
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// parent returns the span s is a child of, if the trace has it.
func (ss jaegerSpans) parent(s jaegerSpan) (jaegerSpan, bool) {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			for _, p := range ss {
				if strings.TrimLeft(p.SpanID, "0") == strings.TrimLeft(r.SpanID, "0") {
					return p, true
				}
			}
		}
	}
	return jaegerSpan{}, false
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (ss jaegerSpans) names() []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.OperationName)
	}
	return out
}

// waitedForARecompute reports whether the trace holds the story of a read
// that waited: the api's server span (the child of the load generator's
// span sent), a cachex.get miss under it, a cachex.recompute under that, and
// a Postgres query span (otelpgx: db.system.name postgresql) under the
// recompute.
func (ss jaegerSpans) waitedForARecompute(sentSpanID string) bool {
	for _, q := range ss {
		if q.tag("db.system.name") != "postgresql" && q.tag("db.system") != "postgresql" {
			continue
		}
		rec, ok := ss.parent(q)
		if !ok || rec.OperationName != "cachex.recompute" {
			continue
		}
		get, ok := ss.parent(rec)
		if !ok || get.OperationName != "cachex.get" || get.tag("cachex.outcome") != "miss" {
			continue
		}
		server, ok := ss.parent(get)
		if !ok || server.OperationName != "GET "+statsRoute {
			continue
		}
		for _, r := range server.References {
			if strings.TrimLeft(r.SpanID, "0") == strings.TrimLeft(sentSpanID, "0") {
				return true
			}
		}
	}
	return false
}

// exemplarTraceIDs returns the trace_id of every exemplar Prometheus stored
// for query between from and to.
func exemplarTraceIDs(t *testing.T, prom, query string, from, to time.Time) []string {
	t.Helper()
	q := url.Values{"query": {query}, "start": {unix(from)}, "end": {unix(to)}}
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   []struct {
			Exemplars []struct {
				Labels map[string]string `json:"labels"`
			} `json:"exemplars"`
		} `json:"data"`
	}
	getJSON(t, prom+"/api/v1/query_exemplars?"+q.Encode(), &body)
	if body.Status != "success" {
		t.Fatalf("query_exemplars %s: %s", query, body.Error)
	}
	var ids []string
	for _, s := range body.Data {
		for _, e := range s.Exemplars {
			if id := e.Labels["trace_id"]; id != "" {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// prometheusBin returns Debian's prometheus, logging its version.
func prometheusBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not on PATH: install Debian's prometheus package (apt-get install -y prometheus)")
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err == nil {
		t.Logf("%s", bytes.SplitN(out, []byte("\n"), 2)[0])
	}
	return bin
}

// buildBinaries builds cmd/api and cmd/loadgen and returns their paths.
func buildBinaries(t *testing.T, root string) (api, loadgen string) {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./cmd/api", "./cmd/loadgen")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(bin, "api"), filepath.Join(bin, "loadgen")
}

// execIn is the command bin args with env.
func execIn(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	return cmd
}

// readJSON decodes the JSON file path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
