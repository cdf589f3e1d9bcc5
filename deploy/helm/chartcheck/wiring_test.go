package chartcheck

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// forEachSet renders the chart with each value set and runs check on it in a
// subtest, failing the subtest with every error check returns.
func forEachSet(t *testing.T, check func(*release) []error) {
	t.Helper()
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, vs.values)
			for _, err := range check(r) {
				t.Error(err)
			}
		})
	}
}

// TestServicesSelectPods: every Service selects the pods of exactly one
// Deployment or StatefulSet, and each of its ports targets a port those pods'
// containers declare; every controller's selector matches its own pod
// template; every StatefulSet's serviceName is a Service that selects its
// pods; every PodDisruptionBudget selects one controller's pods.
func TestServicesSelectPods(t *testing.T) { forEachSet(t, checkSelectors) }

// TestReferencesResolve: every secretKeyRef names a Secret and key of the
// release, every configMap volume a ConfigMap (and its items' keys), every
// volumeMount a volume of its pod (and a subPath a key of its ConfigMap),
// and every probe's named port a port of its container.
func TestReferencesResolve(t *testing.T) { forEachSet(t, checkReferences) }

// TestAddressesResolve: every host:port that a container is given (env,
// arguments, command) or that a ConfigMap holds (Prometheus's targets,
// Grafana's datasources) names a Service of the release and one of its
// ports, or a StatefulSet pod (pod.service) behind the headless Service that
// governs it, with an index below its replica count.
func TestAddressesResolve(t *testing.T) { forEachSet(t, checkAddresses) }

// controllers returns the Deployments and StatefulSets: the workloads a
// Service may select.
func (r *release) controllers() []workload {
	var ws []workload
	for _, w := range r.workloads {
		if w.kind != "Job" {
			ws = append(ws, w)
		}
	}
	return ws
}

// selects reports whether selector (non-empty) matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// selected returns the controllers whose pods selector matches.
func (r *release) selected(selector map[string]string) []workload {
	var ws []workload
	for _, w := range r.controllers() {
		if selects(selector, w.pod.Labels) {
			ws = append(ws, w)
		}
	}
	return ws
}

// containerPort reports whether a container of w's pods declares target
// (a port name or number).
func (w workload) containerPort(target intstr.IntOrString) bool {
	for _, c := range w.allContainers() {
		for _, p := range c.Ports {
			if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return true
			}
		}
	}
	return false
}

func checkSelectors(r *release) []error {
	var errs []error
	for _, name := range sortedKeys(r.services) {
		svc := r.services[name]
		ws := r.selected(svc.Spec.Selector)
		if len(ws) != 1 {
			errs = append(errs, fmt.Errorf("Service %s (selector %v) selects the pods of %d controllers, want 1", name, svc.Spec.Selector, len(ws)))
			continue
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port)
			}
			if !ws[0].containerPort(target) {
				errs = append(errs, fmt.Errorf("Service %s port %d targets %s, which no container of %s %s declares", name, p.Port, target.String(), ws[0].kind, ws[0].name))
			}
		}
	}
	for _, w := range r.controllers() {
		if len(r.selected(w.pod.Labels)) == 0 {
			errs = append(errs, fmt.Errorf("%s %s: its pod labels %v match no controller's", w.kind, w.name, w.pod.Labels))
		}
		if w.kind == "StatefulSet" {
			svc, ok := r.services[w.serviceName]
			if !ok || !selects(svc.Spec.Selector, w.pod.Labels) {
				errs = append(errs, fmt.Errorf("StatefulSet %s: serviceName %q is not a Service that selects its pods", w.name, w.serviceName))
			}
		}
	}
	errs = append(errs, checkControllerSelectors(r)...)
	for _, pdb := range r.pdbs {
		if pdb.Spec.Selector == nil || len(r.selected(pdb.Spec.Selector.MatchLabels)) != 1 || len(pdb.Spec.Selector.MatchExpressions) > 0 {
			errs = append(errs, fmt.Errorf("PodDisruptionBudget %s does not select exactly one controller's pods by labels", pdb.Name))
		}
	}
	return errs
}

// checkControllerSelectors: each controller's selector matches its own pod
// template (the API server refuses one that does not).
func checkControllerSelectors(r *release) []error {
	var errs []error
	for _, w := range r.controllers() {
		if !selects(w.matchLabels, w.pod.Labels) {
			errs = append(errs, fmt.Errorf("%s %s: selector %v does not match its pod template's labels %v", w.kind, w.name, w.matchLabels, w.pod.Labels))
		}
	}
	return errs
}

func checkReferences(r *release) []error {
	var errs []error
	for _, w := range r.workloads {
		vols := map[string]corev1.Volume{}
		for _, v := range w.pod.Spec.Volumes {
			vols[v.Name] = v
			if v.ConfigMap != nil {
				cm, ok := r.configMaps[v.ConfigMap.Name]
				if !ok {
					errs = append(errs, fmt.Errorf("%s %s: volume %s names ConfigMap %s, which the release does not have", w.kind, w.name, v.Name, v.ConfigMap.Name))
				}
				for _, it := range v.ConfigMap.Items {
					if _, ok := cm.Data[it.Key]; !ok {
						errs = append(errs, fmt.Errorf("%s %s: volume %s names key %s of ConfigMap %s, which it lacks", w.kind, w.name, v.Name, it.Key, v.ConfigMap.Name))
					}
				}
			}
		}
		for _, c := range w.allContainers() {
			errs = append(errs, r.checkContainerRefs(w, c, vols)...)
		}
	}
	return errs
}

// checkContainerRefs checks one container's secret references, volume mounts
// and probe ports.
func (r *release) checkContainerRefs(w workload, c corev1.Container, vols map[string]corev1.Volume) []error {
	var errs []error
	where := fmt.Sprintf("%s %s container %s", w.kind, w.name, c.Name)
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if _, ok := r.secretValue(ref.Name, ref.Key); !ok {
			errs = append(errs, fmt.Errorf("%s: env %s names key %s of Secret %s, which the release does not have", where, e.Name, ref.Key, ref.Name))
		}
	}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: mounts volume %s, which its pod does not have", where, m.Name))
			continue
		}
		if m.SubPath != "" && v.ConfigMap != nil {
			if _, ok := r.configMaps[v.ConfigMap.Name].Data[m.SubPath]; !ok {
				errs = append(errs, fmt.Errorf("%s: mounts key %s of ConfigMap %s, which it lacks", where, m.SubPath, v.ConfigMap.Name))
			}
		}
	}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
			return cp.Name == p.HTTPGet.Port.StrVal || cp.ContainerPort == p.HTTPGet.Port.IntVal
		}) {
			errs = append(errs, fmt.Errorf("%s: probe %s targets port %s, which the container does not declare", where, p.HTTPGet.Path, p.HTTPGet.Port.String()))
		}
	}
	return errs
}

// secretValue returns the value of key in the release's Secret name.
func (r *release) secretValue(name, key string) (string, bool) {
	s, ok := r.secrets[name]
	if !ok {
		return "", false
	}
	if v, ok := s.StringData[key]; ok {
		return v, true
	}
	v, ok := s.Data[key]
	return string(v), ok
}

// address is a host:port found in the release and where.
type address struct {
	host  string
	port  int
	where string
}

var (
	// hostPort matches host:port where host is a name (not an IP literal),
	// after a delimiter: "postgres@postgres:5432", "http://jaeger:4318",
	// "addr=redis-cache-1.redis-cache:6379", "- loadgen:9102".
	hostPort = regexp.MustCompile(`(?:^|[\s/@,="'\[])([a-z][a-z0-9-]*(?:\.[a-z][a-z0-9-]*)*):([0-9]{2,5})\b`)
	// hostThenPort matches pg_isready's and redis-cli's -h NAME -p PORT.
	hostThenPort = regexp.MustCompile(`-h\s+([a-z][a-z0-9.-]*)\s+-p\s+([0-9]+)`)
)

// findAddresses returns the addresses in s.
func findAddresses(s, where string) []address {
	var as []address
	for _, re := range []*regexp.Regexp{hostPort, hostThenPort} {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			port, _ := strconv.Atoi(m[2])
			as = append(as, address{m[1], port, where})
		}
	}
	return as
}

// addresses returns every address the release's containers and ConfigMaps
// hold.
func (r *release) addresses() []address {
	var as []address
	for _, w := range r.workloads {
		for _, c := range w.allContainers() {
			where := fmt.Sprintf("%s %s container %s", w.kind, w.name, c.Name)
			for _, e := range c.Env {
				as = append(as, findAddresses(e.Value, where+" env "+e.Name)...)
			}
			as = append(as, findAddresses(strings.Join(append(slices.Clone(c.Command), c.Args...), " "), where+" command")...)
		}
	}
	for _, name := range sortedKeys(r.configMaps) {
		for key, v := range r.configMaps[name].Data {
			as = append(as, findAddresses(v, "ConfigMap "+name+" "+key)...)
		}
	}
	return as
}

func checkAddresses(r *release) []error {
	var errs []error
	found := map[string]bool{}
	for _, a := range r.addresses() {
		if err := r.resolve(a.host, a.port); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s:%d %v", a.where, a.host, a.port, err))
		}
		found[fmt.Sprintf("%s:%d", a.host, a.port)] = true
	}
	// The scan must see the addresses the demo is wired by, or it checks
	// nothing.
	for _, want := range []string{"postgres:5432", "jaeger:4318", "jaeger:16686", "prometheus:9090", "loadgen:9102", "api-0.api-headless:8080", "redis-lock-1:6379"} {
		if !found[want] {
			errs = append(errs, fmt.Errorf("no container or ConfigMap names %s: the address scan missed it", want))
		}
	}
	return errs
}

// resolve returns nil when host:port reaches a Service port of the release:
// host a Service's name, or pod.service for a StatefulSet's pod behind the
// headless Service that governs it.
func (r *release) resolve(host string, port int) error {
	svcName, pod, isPod := strings.Cut(host, ".")
	if isPod {
		svcName, pod = pod, svcName
	}
	svc, ok := r.services[svcName]
	if !ok {
		return fmt.Errorf("names no Service of the release (Service %q)", svcName)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == port }) {
		return fmt.Errorf("uses a port Service %s does not have", svcName)
	}
	if !isPod {
		return nil
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return fmt.Errorf("names a pod behind Service %s, which is not headless (no per-pod DNS)", svcName)
	}
	for _, w := range r.controllers() {
		if w.kind != "StatefulSet" || w.serviceName != svcName {
			continue
		}
		for i := range w.replicas {
			if pod == fmt.Sprintf("%s-%d", w.name, i) {
				return nil
			}
		}
	}
	return fmt.Errorf("names pod %s, which no StatefulSet governed by %s has", pod, svcName)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
