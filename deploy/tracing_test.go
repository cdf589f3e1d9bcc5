package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/stampede-lab/stampede/internal/testenv"
)

const (
	jaegerLocalConfig   = "deploy/jaeger/local.yaml"   // make run-local's (scripts/local.sh) and the tests'
	jaegerComposeConfig = "deploy/jaeger/compose.yaml" // both compose variants'
	jaegerToolModule    = "tools/jaeger/go.mod"        // the module make jaeger builds
	jaegerDatasource    = "deploy/grafana/provisioning/datasources/jaeger.yml"
	otlpHTTPPort        = "4318" // the OTLP/HTTP port of the Jaeger image and of OTEL_EXPORTER_OTLP_ENDPOINT
)

// jaegerConfig is the part of a Jaeger v2 configuration the tests read.
type jaegerConfig struct {
	Service struct {
		Extensions []string `yaml:"extensions"`
		Pipelines  map[string]struct {
			Receivers []string `yaml:"receivers"`
			Exporters []string `yaml:"exporters"`
		} `yaml:"pipelines"`
		Telemetry struct {
			Metrics struct {
				Level string `yaml:"level"`
			} `yaml:"metrics"`
		} `yaml:"telemetry"`
	} `yaml:"service"`
	Extensions struct {
		Storage struct {
			Backends map[string]struct {
				Memory *struct {
					MaxTraces int `yaml:"max_traces"`
				} `yaml:"memory"`
			} `yaml:"backends"`
		} `yaml:"jaeger_storage"`
		Query struct {
			Storage struct {
				Traces string `yaml:"traces"`
			} `yaml:"storage"`
			EnableTracing *bool    `yaml:"enable_tracing"`
			HTTP          endpoint `yaml:"http"`
			GRPC          endpoint `yaml:"grpc"`
		} `yaml:"jaeger_query"`
	} `yaml:"extensions"`
	Receivers struct {
		OTLP struct {
			Protocols map[string]*endpoint `yaml:"protocols"`
		} `yaml:"otlp"`
	} `yaml:"receivers"`
	Exporters struct {
		Storage struct {
			TraceStorage string `yaml:"trace_storage"`
		} `yaml:"jaeger_storage_exporter"`
	} `yaml:"exporters"`
}

// endpoint is a listener's configuration.
type endpoint struct {
	Endpoint string `yaml:"endpoint"`
}

// readJaegerConfig reads the Jaeger configuration at path (from the
// repository root) and checks what both of the repository's have in common:
// OTLP in, the in-memory store out, the query service reading that store,
// and the query service not tracing itself (Jaeger v2 turns that on by
// default and sends the spans to localhost:4317).
func readJaegerConfig(t *testing.T, root, path string) jaegerConfig {
	t.Helper()
	var c jaegerConfig
	readYAML(t, filepath.Join(root, path), &c)
	traces, ok := c.Service.Pipelines["traces"]
	if !ok || !slices.Contains(traces.Receivers, "otlp") || !slices.Contains(traces.Exporters, "jaeger_storage_exporter") {
		t.Errorf("%s: want a traces pipeline from receiver otlp to exporter jaeger_storage_exporter, got %+v", path, c.Service.Pipelines)
	}
	for _, ext := range []string{"jaeger_storage", "jaeger_query"} {
		if !slices.Contains(c.Service.Extensions, ext) {
			t.Errorf("%s: service.extensions %v lacks %s", path, c.Service.Extensions, ext)
		}
	}
	store := c.Exporters.Storage.TraceStorage
	if b, ok := c.Extensions.Storage.Backends[store]; !ok || b.Memory == nil || b.Memory.MaxTraces <= 0 {
		t.Errorf("%s: the exporter's trace_storage %q is not an in-memory backend with max_traces > 0 (backends %+v)", path, store, c.Extensions.Storage.Backends)
	}
	if q := c.Extensions.Query.Storage.Traces; q != store {
		t.Errorf("%s: jaeger_query reads storage %q, the exporter writes %q", path, q, store)
	}
	if et := c.Extensions.Query.EnableTracing; et == nil || *et {
		t.Errorf("%s: set extensions.jaeger_query.enable_tracing: false (default true: Jaeger traces itself to localhost:4317)", path)
	}
	if c.Receivers.OTLP.Protocols["http"] == nil || c.Receivers.OTLP.Protocols["http"].Endpoint == "" {
		t.Errorf("%s: no receivers.otlp.protocols.http.endpoint (the API exports over OTLP/HTTP)", path)
	}
	return c
}

// TestJaegerConfigs checks the two Jaeger configurations. The local one
// listens on loopback only, with no fixed port beyond the two local.sh
// overrides (the OTLP/HTTP receiver and the query service's HTTP), so that
// several can run at once; the compose one listens on every interface, on
// the ports the compose files and Grafana's datasource use.
func TestJaegerConfigs(t *testing.T) {
	root := repoRoot(t)

	local := readJaegerConfig(t, root, jaegerLocalConfig)
	listeners := map[string]string{
		"extensions.jaeger_query.http.endpoint": local.Extensions.Query.HTTP.Endpoint,
		"extensions.jaeger_query.grpc.endpoint": local.Extensions.Query.GRPC.Endpoint,
	}
	for name, e := range local.Receivers.OTLP.Protocols {
		if e == nil {
			e = &endpoint{}
		}
		listeners["receivers.otlp.protocols."+name+".endpoint"] = e.Endpoint
	}
	for key, ep := range listeners {
		host, _, err := net.SplitHostPort(ep)
		if err != nil || host != "127.0.0.1" {
			t.Errorf("%s: %s = %q, want 127.0.0.1:port (loopback only)", jaegerLocalConfig, key, ep)
		}
	}
	for key, want := range map[string]string{
		"receivers.otlp.protocols.http.endpoint": "127.0.0.1:4318",  // the defaults, which
		"extensions.jaeger_query.http.endpoint":  "127.0.0.1:16686", // local.sh overrides
		"extensions.jaeger_query.grpc.endpoint":  "127.0.0.1:0",     // unused: any free port
	} {
		if listeners[key] != want {
			t.Errorf("%s: %s = %q, want %q", jaegerLocalConfig, key, listeners[key], want)
		}
	}
	if len(local.Receivers.OTLP.Protocols) != 1 {
		t.Errorf("%s: OTLP protocols %v, want http only (grpc would listen on a fixed port)", jaegerLocalConfig, local.Receivers.OTLP.Protocols)
	}
	if l := local.Service.Telemetry.Metrics.Level; l != "none" {
		t.Errorf("%s: service.telemetry.metrics.level %q, want none (else Jaeger's own metrics listen on 127.0.0.1:8888)", jaegerLocalConfig, l)
	}

	c := readJaegerConfig(t, root, jaegerComposeConfig)
	if got := c.Receivers.OTLP.Protocols["http"]; got == nil || got.Endpoint != "0.0.0.0:"+otlpHTTPPort {
		t.Errorf("%s: receivers.otlp.protocols.http.endpoint %+v, want 0.0.0.0:%s (the other containers send to it)", jaegerComposeConfig, got, otlpHTTPPort)
	}
	if got := c.Extensions.Query.HTTP.Endpoint; got != "0.0.0.0:16686" {
		t.Errorf("%s: extensions.jaeger_query.http.endpoint %q, want 0.0.0.0:16686 (published, and Grafana's datasource)", jaegerComposeConfig, got)
	}
}

// TestComposeTracing checks the tracing wiring of each compose variant: a
// jaeger service running the mounted deploy/jaeger/compose.yaml, an image
// that is the release of the Go module make jaeger builds, every API
// exporting to it (OTEL_EXPORTER_OTLP_ENDPOINT, TRACE_SAMPLE), Prometheus
// storing exemplars and negotiating OpenMetrics (the exemplars' format), and
// Grafana's Jaeger datasource pointing at the service.
func TestComposeTracing(t *testing.T) {
	root := repoRoot(t)
	moduleVersion := jaegerModuleVersion(t, root)
	for _, v := range variants {
		t.Run(v.compose, func(t *testing.T) {
			p := loadProject(t, root, v.compose)
			j, err := p.GetService("jaeger")
			if err != nil {
				t.Fatal(err)
			}
			checkJaegerImage(t, j.Image, moduleVersion)
			var cfgPath string
			for _, arg := range j.Command {
				if f, ok := strings.CutPrefix(arg, "--config=file:"); ok {
					cfgPath = f
				}
			}
			if hp, ok := hostPath(root, j, cfgPath); cfgPath == "" || !ok || hp != filepath.Join(root, jaegerComposeConfig) {
				t.Errorf("service jaeger: command %q must read --config=file:<path> where %s is mounted (reads %q)", j.Command, jaegerComposeConfig, cfgPath)
			}
			// A --set of a key the file lacks adds it, silently: a typo in a
			// backend's name makes a second, unused backend.
			var raw map[string]any
			readYAML(t, filepath.Join(root, jaegerComposeConfig), &raw)
			for _, arg := range j.Command {
				if kv, ok := strings.CutPrefix(arg, "--set="); ok {
					key, _, _ := strings.Cut(kv, "=")
					if !hasKey(raw, strings.Split(key, ".")) {
						t.Errorf("service jaeger: %s sets %s, which %s does not have", arg, key, jaegerComposeConfig)
					}
				}
			}
			if !slices.ContainsFunc(j.Ports, func(p types.ServicePortConfig) bool {
				return p.Target == 16686 && p.Published == "16686" && p.HostIP == "127.0.0.1"
			}) {
				t.Errorf("service jaeger: publishes %+v, want the UI 16686 on 127.0.0.1:16686", j.Ports)
			}

			apis := 0
			for _, name := range p.ServiceNames() {
				svc := p.Services[name]
				if !strings.HasPrefix(name, "api") {
					continue
				}
				apis++
				ep := svc.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"]
				u, err := url.Parse(deref(ep))
				switch {
				case ep == nil:
					t.Errorf("service %s: OTEL_EXPORTER_OTLP_ENDPOINT is not set: it exports no traces", name)
				case err != nil || u.Scheme != "http" || (u.Path != "" && u.Path != "/"):
					t.Errorf("service %s: OTEL_EXPORTER_OTLP_ENDPOINT %q, want a base URL http://host:port", name, *ep)
				case u.Hostname() != "jaeger" || u.Port() != otlpHTTPPort:
					t.Errorf("service %s: OTEL_EXPORTER_OTLP_ENDPOINT %q, want http://jaeger:%s (the jaeger service's OTLP/HTTP receiver)", name, *ep, otlpHTTPPort)
				}
				if _, ok := svc.DependsOn["jaeger"]; !ok {
					t.Errorf("service %s exports to jaeger and must depend on it", name)
				}
				if s := svc.Environment["TRACE_SAMPLE"]; s == nil {
					t.Errorf("service %s: TRACE_SAMPLE is not set", name)
				} else if f, err := strconv.ParseFloat(*s, 64); err != nil || f < 0 || f > 1 {
					t.Errorf("service %s: TRACE_SAMPLE %q, want a ratio in 0..1", name, *s)
				}
			}
			if apis == 0 {
				t.Error("no api service")
			}

			prom, err := p.GetService("prometheus")
			if err != nil {
				t.Fatal(err)
			}
			if !hasFeature(prom.Command, "exemplar-storage") {
				t.Errorf("service prometheus: command %q lacks --enable-feature=exemplar-storage: the trace ids of the exemplars are dropped", prom.Command)
			}
			// A command replaces the image's: it must still name the
			// configuration the other tests check and the volume's path.
			for _, want := range []string{"--config.file=" + promConfigPath, "--storage.tsdb.path=/prometheus"} {
				if len(prom.Command) > 0 && !slices.Contains(prom.Command, want) {
					t.Errorf("service prometheus: command %q lacks %s", prom.Command, want)
				}
			}
			checkScrapeProtocols(t, filepath.Join(root, v.prometheus))

			g, err := p.GetService("grafana")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := g.DependsOn["jaeger"]; !ok {
				t.Error("service grafana queries jaeger and must depend on it")
			}
		})
	}
}

// TestGrafanaExemplarLinks checks the provisioned datasources: the
// Prometheus datasource turns each exemplar's trace_id label into a link to a
// provisioned Jaeger datasource, which points at the compose service's UI
// port.
func TestGrafanaExemplarLinks(t *testing.T) {
	root := repoRoot(t)
	all := provisionedDatasources(t, root)
	byUID := map[string]datasource{}
	for _, d := range all {
		byUID[d.UID] = d
	}
	prom, ok := byUID["prometheus"]
	if !ok {
		t.Fatalf("no datasource with uid prometheus: %+v", all)
	}
	dests := prom.JSONData.ExemplarTraceIDDestinations
	if len(dests) == 0 {
		t.Fatal("the prometheus datasource has no jsonData.exemplarTraceIdDestinations: exemplars link nowhere")
	}
	for _, d := range dests {
		if d.Name != "trace_id" {
			t.Errorf("exemplarTraceIdDestinations: name %q, want trace_id (the API's exemplar label)", d.Name)
		}
		if target, ok := byUID[d.DatasourceUID]; !ok || target.Type != "jaeger" {
			t.Errorf("exemplarTraceIdDestinations: datasourceUid %q is not a provisioned Jaeger datasource", d.DatasourceUID)
		}
	}
	j, ok := byUID["jaeger"]
	if !ok {
		t.Fatalf("no datasource with uid jaeger in %s", jaegerDatasource)
	}
	if u, err := url.Parse(j.URL); err != nil || u.Hostname() != "jaeger" || u.Port() != "16686" {
		t.Errorf("jaeger datasource: url %q, want http://jaeger:16686 (the service's query port)", j.URL)
	}
}

// datasource is a provisioned Grafana datasource.
type datasource struct {
	Name      string `yaml:"name"`
	UID       string `yaml:"uid"`
	Type      string `yaml:"type"`
	URL       string `yaml:"url"`
	IsDefault bool   `yaml:"isDefault"`
	JSONData  struct {
		ExemplarTraceIDDestinations []struct {
			Name          string `yaml:"name"`
			DatasourceUID string `yaml:"datasourceUid"`
		} `yaml:"exemplarTraceIdDestinations"`
	} `yaml:"jsonData"`
}

// provisionedDatasources returns the datasources of every file in
// deploy/grafana/provisioning/datasources (Grafana reads them all).
func provisionedDatasources(t *testing.T, root string) []datasource {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, filepath.Dir(datasourceFile), "*.y*ml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no datasource files next to %s: %v", datasourceFile, err)
	}
	var all []datasource
	for _, f := range files {
		var ds struct {
			Datasources []datasource `yaml:"datasources"`
		}
		readYAML(t, f, &ds)
		all = append(all, ds.Datasources...)
	}
	return all
}

// hasKey reports whether the YAML document m has the key path.
func hasKey(m map[string]any, path []string) bool {
	v, ok := m[path[0]]
	if !ok || len(path) == 1 {
		return ok
	}
	sub, _ := v.(map[string]any)
	return sub != nil && hasKey(sub, path[1:])
}

// hasFeature reports whether a Prometheus command line enables feature
// (--enable-feature=a,b or repeated flags).
func hasFeature(cmd []string, feature string) bool {
	for _, arg := range cmd {
		if list, ok := strings.CutPrefix(arg, "--enable-feature="); ok && slices.Contains(strings.Split(list, ","), feature) {
			return true
		}
	}
	return false
}

// checkScrapeProtocols fails the test when the Prometheus configuration at
// path sets scrape_protocols (globally or in a job) without an OpenMetrics
// protocol: the text format carries no exemplars. Unset, Prometheus asks for
// OpenMetrics first.
func checkScrapeProtocols(t *testing.T, path string) {
	t.Helper()
	var cfg struct {
		Global struct {
			ScrapeProtocols []string `yaml:"scrape_protocols"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName         string   `yaml:"job_name"`
			ScrapeProtocols []string `yaml:"scrape_protocols"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, path, &cfg)
	check := func(where string, protocols []string) {
		if len(protocols) > 0 && !slices.ContainsFunc(protocols, func(p string) bool { return strings.HasPrefix(p, "OpenMetricsText") }) {
			t.Errorf("%s: %s scrape_protocols %v has no OpenMetricsText*: no exemplars would be scraped", path, where, protocols)
		}
	}
	check("global", cfg.Global.ScrapeProtocols)
	for _, sc := range cfg.ScrapeConfigs {
		check("job "+sc.JobName, sc.ScrapeProtocols)
	}
}

// jaegerModuleVersion returns the version of github.com/jaegertracing/jaeger
// that tools/jaeger/go.mod requires (the release make jaeger builds).
func jaegerModuleVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, jaegerToolModule))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/jaegertracing/jaeger\s+(v1\.[0-9]+\.[0-9]+)\b`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s requires no github.com/jaegertracing/jaeger v1.x.y", jaegerToolModule)
	}
	return string(m[1])
}

// checkJaegerImage checks that img is the official Jaeger v2 image of the
// release that ships Go module version v1.N.P: Jaeger releases v1.N.P and
// v2.(N-63).P together (v1.63.0 and v2.0.0 first, v1.76.0 and v2.13.0), so
// that compose and make jaeger run the same Jaeger.
func checkJaegerImage(t *testing.T, img, moduleVersion string) {
	t.Helper()
	repo, tag := splitImage(img)
	if repo != "jaegertracing/jaeger" {
		t.Errorf("service jaeger: image %q, want jaegertracing/jaeger (Jaeger v2)", img)
		return
	}
	var minor, patch int
	if _, err := fmt.Sscanf(moduleVersion, "v1.%d.%d", &minor, &patch); err != nil || minor < 63 {
		t.Fatalf("%s: jaeger module %s: want v1.63.0 or later (Jaeger v2)", jaegerToolModule, moduleVersion)
	}
	if want := fmt.Sprintf("2.%d.%d", minor-63, patch); tag != want {
		t.Errorf("service jaeger: image %s, but %s builds Jaeger %s, released as image tag %s: change both together", img, jaegerToolModule, moduleVersion, want)
	}
}

// jaegerBin returns the Jaeger binary make jaeger builds ($JAEGER_BIN if
// set), failing the test when there is none: the first build takes minutes,
// so it is not part of go test (.ci/run builds it first).
func jaegerBin(t *testing.T, root string) string {
	t.Helper()
	bin := os.Getenv("JAEGER_BIN")
	if bin == "" {
		bin = filepath.Join(root, ".tools", "bin", "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no Jaeger binary at %s: run make jaeger once (the first build takes minutes)", bin)
	}
	return bin
}

// TestJaegerValidatesConfigs runs jaeger validate on both configurations:
// the Jaeger of make jaeger (the compose image's release) accepts every key.
func TestJaegerValidatesConfigs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Jaeger")
	}
	root := repoRoot(t)
	bin := jaegerBin(t, root)
	for _, cfg := range []string{jaegerLocalConfig, jaegerComposeConfig} {
		cmd := exec.Command(bin, "validate", "--config=file:"+filepath.Join(root, cfg))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("jaeger validate %s: %v\n%s", cfg, err, out)
		}
	}
}

// TestJaegerLocal runs Jaeger on deploy/jaeger/local.yaml as scripts/local.sh
// does (the OTLP/HTTP receiver and the query service on free loopback ports,
// by --set), sends it a span over OTLP/HTTP JSON and reads the trace back
// from the query API.
func TestJaegerLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Jaeger")
	}
	root := repoRoot(t)
	bin := jaegerBin(t, root)
	otlpAddr, queryAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	logPath := filepath.Join(t.TempDir(), "jaeger.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "--config=file:"+filepath.Join(root, jaegerLocalConfig),
		"--set=receivers.otlp.protocols.http.endpoint="+otlpAddr,
		"--set=extensions.jaeger_query.http.endpoint="+queryAddr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("jaeger log:\n%s", b)
		}
	})

	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	traceID, spanID := hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	now := time.Now()
	span := map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{
			map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "stampede-api"}},
		}},
		"scopeSpans": []any{map[string]any{
			"scope": map[string]any{"name": "deploy-test"},
			"spans": []any{map[string]any{
				"traceId": traceID, "spanId": spanID, "name": "GET /v1/products/{id}", "kind": 2,
				"startTimeUnixNano": strconv.FormatInt(now.Add(-5*time.Millisecond).UnixNano(), 10),
				"endTimeUnixNano":   strconv.FormatInt(now.UnixNano(), 10),
			}},
		}},
	}}}
	body, err := json.Marshal(span)
	if err != nil {
		t.Fatal(err)
	}

	// Posting fails until the receiver listens; the trace is stored once
	// the batch processor has flushed (200ms by default).
	deadline := time.Now().Add(time.Minute)
	posted := false
	var last string
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("jaeger exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s not readable from http://%s/api/traces/ within a minute (posted: %v); last: %s", traceID, queryAddr, posted, last)
		}
		if !posted {
			resp, err := http.Post("http://"+otlpAddr+"/v1/traces", "application/json", bytes.NewReader(body))
			if err != nil {
				last = err.Error()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /v1/traces: %s: %s", resp.Status, msg)
			}
			posted = true
		}
		got, err := getTrace(context.Background(), "http://"+queryAddr, traceID)
		if err != nil {
			last = err.Error()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if got.service != "stampede-api" || got.operation != "GET /v1/products/{id}" {
			t.Fatalf("trace %s: service %q operation %q, want stampede-api and GET /v1/products/{id}", traceID, got.service, got.operation)
		}
		break
	}
}

// storedSpan is what the query API says about a trace's first span.
type storedSpan struct{ service, operation string }

// getTrace reads trace id from the Jaeger query API at base.
func getTrace(ctx context.Context, base, id string) (storedSpan, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/traces/"+id, nil)
	if err != nil {
		return storedSpan{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return storedSpan{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return storedSpan{}, fmt.Errorf("GET /api/traces/%s: %s: %.200s", id, resp.Status, b)
	}
	var tr struct {
		Data []struct {
			Spans []struct {
				OperationName string `json:"operationName"`
				ProcessID     string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		return storedSpan{}, fmt.Errorf("GET /api/traces/%s: %v", id, err)
	}
	if len(tr.Data) != 1 || len(tr.Data[0].Spans) == 0 {
		return storedSpan{}, fmt.Errorf("GET /api/traces/%s: no spans: %.200s", id, b)
	}
	s := tr.Data[0].Spans[0]
	return storedSpan{tr.Data[0].Processes[s.ProcessID].ServiceName, s.OperationName}, nil
}
