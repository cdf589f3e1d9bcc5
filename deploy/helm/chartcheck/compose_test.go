package chartcheck

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// composeService is the part of a compose service the comparisons read.
type composeService struct {
	Image       string            `json:"image"`
	Entrypoint  []string          `json:"entrypoint"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	Volumes     []string          `json:"volumes"`
}

// composeFile reads compose.yaml's services, with ${VAR:-default} in the
// environment replaced by its default (what docker compose up runs with
// nothing set).
func composeFile(t *testing.T) map[string]composeService {
	t.Helper()
	var f struct {
		Services map[string]composeService `json:"services"`
	}
	if err := yaml.Unmarshal(readRepo(t, "compose.yaml"), &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	interp := regexp.MustCompile(`\$\{\w+:-([^}]*)\}`)
	for _, s := range f.Services {
		for k, v := range s.Environment {
			s.Environment[k] = interp.ReplaceAllString(v, "$1")
		}
	}
	return f.Services
}

// envOf returns c's environment with Secret references resolved.
func (r *release) envOf(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			v, ok := r.secretValue(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			if !ok {
				t.Fatalf("container %s: env %s: no such Secret key", c.Name, e.Name)
			}
			env[e.Name] = v
		}
	}
	return env
}

// TestAPISettingsMatchCompose: with the default values, every api process
// (the API, its wait-seed, the seed Job) gets exactly compose's x-api-env;
// with the scaled set, the same but for the caches on REDIS_CLUSTER_URL (a
// URL the api's go-redis parses, naming every cluster node) and five lock
// masters. The API serves as compose's does and drains for cmd/api's
// default; the seed loads compose's scale; the load generator runs compose's
// command against every API instance.
func TestAPISettingsMatchCompose(t *testing.T) {
	compose := composeFile(t)
	want := compose["api-1"].Environment
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, vs.values)
			api := r.workload(t, "api")
			for _, w := range []workload{api, r.workload(t, "seed-1")} {
				for _, c := range w.allContainers() {
					if c.Image != compose["api-1"].Image {
						continue // the wait for Postgres
					}
					got := r.envOf(t, c)
					if vs.name == "scaled" {
						got = checkScaledEnv(t, got, want)
					}
					if !maps.Equal(got, want) {
						t.Errorf("%s %s container %s: env\n%v\nwant compose's\n%v", w.kind, w.name, c.Name, got, want)
					}
				}
			}
			checkAPICommand(t, api, compose)
			if seed := r.workload(t, "seed-1").container(t, "seed"); !slices.Equal(seed.Args, compose["seed"].Command) {
				t.Errorf("seed Job args %q, want compose's %q", seed.Args, compose["seed"].Command)
			}
			checkLoadgenCommand(t, r.workload(t, "loadgen").container(t, "loadgen"), compose["loadgen"], api.replicas)
		})
	}
}

// checkScaledEnv checks the scaled set's cache and lock settings
// (values-scaled.yaml: a cluster of 3 masters with a replica each, 5 lock
// masters) and returns env with them replaced by compose's, for the
// comparison of the rest.
func checkScaledEnv(t *testing.T, env, compose map[string]string) map[string]string {
	t.Helper()
	env = maps.Clone(env)
	opt, err := redis.ParseClusterURL(env["REDIS_CLUSTER_URL"])
	if err != nil {
		t.Errorf("REDIS_CLUSTER_URL %q: the api's go-redis refuses it: %v", env["REDIS_CLUSTER_URL"], err)
	} else if len(opt.Addrs) != 6 {
		t.Errorf("REDIS_CLUSTER_URL names %d nodes (%v), want the cluster's 6 (3 masters, a replica each)", len(opt.Addrs), opt.Addrs)
	}
	if _, both := env["REDIS_URL"]; both {
		t.Error("REDIS_URL set beside REDIS_CLUSTER_URL: the api refuses both")
	}
	var locks []string
	for i := 1; i <= 5; i++ {
		locks = append(locks, fmt.Sprintf("redis://redis-lock-%d:6379", i))
	}
	if got := env["LOCK_REDIS_URLS"]; got != strings.Join(locks, ",") {
		t.Errorf("LOCK_REDIS_URLS = %q, want five masters %q", got, strings.Join(locks, ","))
	}
	delete(env, "REDIS_CLUSTER_URL")
	env["REDIS_URL"], env["LOCK_REDIS_URLS"] = compose["REDIS_URL"], compose["LOCK_REDIS_URLS"]
	return env
}

// drainDefault is cmd/api's -drain default, read from its source.
func drainDefault(t *testing.T) int {
	t.Helper()
	m := regexp.MustCompile(`"drain", (\d+) ?\* ?time\.Second`).FindSubmatch(readRepo(t, "cmd/api/config.go"))
	if m == nil {
		t.Fatal("cmd/api/config.go: no -drain default of the form \"drain\", N*time.Second")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// checkAPICommand: the API runs compose's command plus only -drain, set to
// cmd/api's default, and its pod's grace period covers the preStop pause,
// the drain and the trace flush (5 s).
func checkAPICommand(t *testing.T, api workload, compose map[string]composeService) {
	t.Helper()
	c := api.container(t, "api")
	drain := drainDefault(t)
	if want := append(slices.Clone(compose["api-1"].Command), "-drain", fmt.Sprintf("%ds", drain)); !slices.Equal(c.Args, want) {
		t.Errorf("api args %q, want %q (compose's command, and -drain at cmd/api's default)", c.Args, want)
	}
	preStop := 0
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = int(c.Lifecycle.PreStop.Sleep.Seconds)
	}
	grace := api.pod.Spec.TerminationGracePeriodSeconds
	if grace == nil || int(*grace) < preStop+drain+5 {
		t.Errorf("terminationGracePeriodSeconds %v, want at least preStop %d + drain %d + 5 (trace flush)", grace, preStop, drain)
	}
}

// TestPostgresTakesEveryPool: Postgres's max_connections holds every API
// instance's pools at their size (cmd/api's MaxConns for the catalog and the
// warehouse, read from its source) and the seed's connection; its
// environment is compose's.
func TestPostgresTakesEveryPool(t *testing.T) {
	src := readRepo(t, "cmd/api/run.go")
	perInstance := 0
	for _, re := range []string{`poolCfg\.MaxConns = (\d+)`, `whCfg\.MaxConns = (\d+)`} {
		m := regexp.MustCompile(re).FindSubmatch(src)
		if m == nil {
			t.Fatalf("cmd/api/run.go: no %s", re)
		}
		n, _ := strconv.Atoi(string(m[1]))
		perInstance += n
	}
	compose := composeFile(t)
	forEachSet(t, func(r *release) []error {
		pg := r.workload(t, "postgres").container(t, "postgres")
		var errs []error
		if env := r.envOf(t, pg); env["POSTGRES_DB"] != compose["postgres"].Environment["POSTGRES_DB"] ||
			env["POSTGRES_HOST_AUTH_METHOD"] != compose["postgres"].Environment["POSTGRES_HOST_AUTH_METHOD"] {
			errs = append(errs, fmt.Errorf("postgres env %v, want compose's %v", env, compose["postgres"].Environment))
		}
		max := -1
		for i, a := range pg.Args {
			if v, ok := strings.CutPrefix(a, "max_connections="); ok && i > 0 && pg.Args[i-1] == "-c" {
				max, _ = strconv.Atoi(v)
			}
		}
		if need := r.workload(t, "api").replicas*perInstance + 1; max < need {
			errs = append(errs, fmt.Errorf("postgres max_connections %d (args %q), want at least %d: %d API instances of %d connections, and the seed", max, pg.Args, need, r.workload(t, "api").replicas, perInstance))
		}
		return errs
	})
}

// checkLoadgenCommand: compose's loadgen entrypoint and command, with
// -target naming every API instance.
func checkLoadgenCommand(t *testing.T, c corev1.Container, compose composeService, replicas int) {
	t.Helper()
	var targets []string
	for i := range replicas {
		targets = append(targets, fmt.Sprintf("http://api-%d.api-headless:8080", i))
	}
	want := slices.Clone(compose.Command)
	i := slices.Index(want, "-target")
	if i < 0 {
		t.Fatal("compose's loadgen has no -target")
	}
	want[i+1] = strings.Join(targets, ",")
	if !slices.Equal(c.Args, want) || !slices.Equal(c.Command, compose.Entrypoint) {
		t.Errorf("loadgen runs %q %q, want %q %q", c.Command, c.Args, compose.Entrypoint, want)
	}
}

// TestImagesMatchCompose: every image the chart runs is one compose runs, at
// the same tag, and every image compose runs is in the chart.
func TestImagesMatchCompose(t *testing.T) {
	compose := composeFile(t)
	composeImages := map[string]bool{}
	for _, s := range compose {
		composeImages[s.Image] = true
	}
	forEachSet(t, func(r *release) []error {
		var errs []error
		used := map[string]bool{}
		for _, w := range r.workloads {
			for _, c := range w.allContainers() {
				used[c.Image] = true
				if !composeImages[c.Image] {
					errs = append(errs, fmt.Errorf("%s %s container %s runs %s, which compose.yaml does not (pin the same versions)", w.kind, w.name, c.Name, c.Image))
				}
			}
		}
		for img := range composeImages {
			if !used[img] {
				errs = append(errs, fmt.Errorf("compose.yaml runs %s, the chart does not", img))
			}
		}
		return errs
	})
}

// TestRedisRolesMatchCompose: the cache servers run compose's redis-cache
// command (plus the cluster's flags in cluster mode); there is one lock
// StatefulSet per LOCK_REDIS_URLS entry, each running compose's lock
// command (noeviction), none of them a cache server.
func TestRedisRolesMatchCompose(t *testing.T) {
	compose := composeFile(t)
	forEachSet(t, func(r *release) []error {
		var errs []error
		cache := r.workload(t, "redis-cache").container(t, "redis")
		if n := len(compose["redis-cache"].Command); len(cache.Command) < n || !slices.Equal(cache.Command[:n], compose["redis-cache"].Command) {
			errs = append(errs, fmt.Errorf("redis-cache runs %q, want compose's %q first", cache.Command, compose["redis-cache"].Command))
		}
		if cluster := slices.Contains(cache.Command, "--cluster-enabled"); cluster != (r.workload(t, "redis-cache").replicas > 1) {
			errs = append(errs, fmt.Errorf("redis-cache: %d servers, cluster-enabled %v", r.workload(t, "redis-cache").replicas, cluster))
		}
		api := r.envOf(t, r.workload(t, "api").container(t, "api"))
		urls := strings.Split(api["LOCK_REDIS_URLS"], ",")
		var locks []workload
		for _, w := range r.controllers() {
			if strings.HasPrefix(w.name, "redis-lock-") {
				locks = append(locks, w)
			}
		}
		if len(locks) != len(urls) {
			errs = append(errs, fmt.Errorf("%d lock StatefulSets, %d LOCK_REDIS_URLS", len(locks), len(urls)))
		}
		for i, w := range locks {
			c := w.container(t, "redis")
			if w.kind != "StatefulSet" || w.replicas != 1 || !slices.Equal(c.Command, compose["redis-lock-1"].Command) {
				errs = append(errs, fmt.Errorf("%s %s: %d replicas running %q, want a StatefulSet of one running compose's %q", w.kind, w.name, w.replicas, c.Command, compose["redis-lock-1"].Command))
			}
			if want := fmt.Sprintf("redis://%s:6379", w.name); i >= len(urls) || !slices.Contains(urls, want) {
				errs = append(errs, fmt.Errorf("LOCK_REDIS_URLS %q lacks %s", urls, want))
			}
		}
		return errs
	})
}

// TestObservabilityMatchesCompose: Prometheus, Grafana and Jaeger run
// compose's commands and environment, and every file compose bind-mounts
// into them is mounted at the same path with the same bytes (the rules,
// Grafana's provisioning and dashboards, Jaeger's configuration);
// Prometheus's configuration is compose's with job api's targets the API
// instances.
func TestObservabilityMatchesCompose(t *testing.T) {
	compose := composeFile(t)
	forEachSet(t, func(r *release) []error {
		var errs []error
		for _, name := range []string{"prometheus", "grafana", "jaeger"} {
			w := r.workload(t, name)
			c := w.container(t, name)
			if len(compose[name].Command) > 0 && !slices.Equal(c.Args, compose[name].Command) {
				errs = append(errs, fmt.Errorf("%s args %q, want compose's %q", name, c.Args, compose[name].Command))
			}
			if env := r.envOf(t, c); len(compose[name].Environment) > 0 && !maps.Equal(env, compose[name].Environment) {
				errs = append(errs, fmt.Errorf("%s env %v, want compose's %v", name, env, compose[name].Environment))
			}
			errs = append(errs, r.checkMounts(t, w, c, compose[name].Volumes)...)
		}
		return append(errs, r.checkPrometheusConfig(t)...)
	})
}

// mounted returns the files c's ConfigMap volumes put in its filesystem, by
// path.
func (r *release) mounted(w workload, c corev1.Container) map[string]string {
	files := map[string]string{}
	for _, m := range c.VolumeMounts {
		for _, v := range w.pod.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			data := r.configMaps[v.ConfigMap.Name].Data
			if m.SubPath != "" {
				files[m.MountPath] = data[m.SubPath]
				continue
			}
			for k, d := range data {
				files[path.Join(m.MountPath, k)] = d
			}
		}
	}
	return files
}

// checkMounts compares c's files with compose's bind mounts (src:dst[:ro]).
// A mounted file must be mounted with the same bytes; of a mounted directory,
// every file the chart mounts must be the directory's file of that name,
// and the chart must mount every file of it that is not a test
// (deploy/rules holds the promtool tests beside the rules). prometheus.yml
// differs by design (checkPrometheusConfig).
func (r *release) checkMounts(t *testing.T, w workload, c corev1.Container, volumes []string) []error {
	t.Helper()
	var errs []error
	files := r.mounted(w, c)
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		src, dst := parts[0], parts[1]
		if strings.HasSuffix(src, "/prometheus.yml") {
			continue
		}
		info, err := os.Stat(filepath.Join(repoRoot, src))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !info.IsDir() {
			if got, ok := files[dst]; !ok || got != string(readRepo(t, src)) {
				errs = append(errs, fmt.Errorf("%s: %s is not compose's %s byte for byte (mounted: %v)", w.name, dst, src, ok))
			}
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(repoRoot, src))
		for _, e := range entries {
			p := path.Join(dst, e.Name())
			got, ok := files[p]
			switch {
			case !ok && !strings.HasSuffix(e.Name(), "_test.yml"):
				errs = append(errs, fmt.Errorf("%s: compose mounts %s/%s at %s, the chart does not", w.name, src, e.Name(), p))
			case ok && got != string(readRepo(t, path.Join(src, e.Name()))):
				errs = append(errs, fmt.Errorf("%s: %s differs from compose's %s/%s", w.name, p, src, e.Name()))
			}
		}
		for p := range files {
			if strings.HasPrefix(p, dst+"/") && !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return path.Join(dst, e.Name()) == p }) {
				errs = append(errs, fmt.Errorf("%s: the chart mounts %s, which compose's %s does not hold", w.name, p, src))
			}
		}
	}
	return errs
}

// checkPrometheusConfig: the chart's prometheus.yml is deploy/prometheus.yml
// with job api's static targets replaced by the API instances, mounted where
// compose mounts it.
func (r *release) checkPrometheusConfig(t *testing.T) []error {
	t.Helper()
	var want map[string]any
	if err := yaml.Unmarshal(readRepo(t, "deploy/prometheus.yml"), &want); err != nil {
		t.Fatal(err)
	}
	var targets []any
	for i := range r.workload(t, "api").replicas {
		targets = append(targets, fmt.Sprintf("api-%d.api-headless:8080", i))
	}
	jobs := 0
	for _, j := range want["scrape_configs"].([]any) {
		job := j.(map[string]any)
		if job["job_name"] == "api" {
			job["static_configs"] = []any{map[string]any{"targets": targets}}
			jobs++
		}
	}
	w := r.workload(t, "prometheus")
	text, ok := r.mounted(w, w.container(t, "prometheus"))["/etc/prometheus/prometheus.yml"]
	var got map[string]any
	if err := yaml.Unmarshal([]byte(text), &got); err != nil || !ok || jobs != 1 {
		return []error{fmt.Errorf("prometheus.yml: mounted %v, %v, %d api jobs", ok, err, jobs)}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return []error{fmt.Errorf("prometheus.yml:\n%v\nwant deploy/prometheus.yml with the API instances:\n%v", got, want)}
	}
	return nil
}
