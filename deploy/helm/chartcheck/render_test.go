package chartcheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Paths from this package's directory.
const (
	repoRoot     = "../../.."
	chartDir     = "../stampede"
	scaledValues = "../values-scaled.yaml"
	namespace    = "stampede"
)

// manifest is one rendered object: the template it came from and the typed
// value it decoded into.
type manifest struct {
	source string
	kind   string
	name   string
	obj    any
}

// workload is a Deployment, StatefulSet or Job, reduced to what the wiring
// checks need.
type workload struct {
	kind, name  string
	replicas    int
	serviceName string            // a StatefulSet's
	matchLabels map[string]string // a controller's selector
	pod         *corev1.PodTemplateSpec
}

// release is a rendered chart, indexed.
type release struct {
	manifests  []manifest
	services   map[string]*corev1.Service
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	pdbs       []*policyv1.PodDisruptionBudget
	workloads  []workload
}

// valueSet is a named set of values the tests render the chart with.
type valueSet struct {
	name   string
	values map[string]any
}

// valueSets returns the default values and the scaled set.
func valueSets(t *testing.T) []valueSet {
	t.Helper()
	data, err := os.ReadFile(scaledValues)
	if err != nil {
		t.Fatal(err)
	}
	var scaled map[string]any
	if err := yaml.UnmarshalStrict(data, &scaled); err != nil {
		t.Fatalf("%s: %v", scaledValues, err)
	}
	return []valueSet{{"default", nil}, {"scaled", scaled}}
}

// renderFiles renders the chart with values over its values.yaml, as helm
// install would with revision 1, and returns each template's output by file.
func renderFiles(values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	top, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "stampede", Namespace: namespace, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, top)
}

// render renders the chart with values and decodes every manifest strictly.
func render(t *testing.T, values map[string]any) *release {
	t.Helper()
	files, err := renderFiles(values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	r := &release{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		docs, err := splitDocuments(files[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, doc := range docs {
			m, err := decode(doc)
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			m.source = name
			r.add(t, m)
		}
	}
	if len(r.manifests) == 0 {
		t.Fatal("the chart rendered no manifest")
	}
	return r
}

// splitDocuments returns the non-empty YAML documents of s.
func splitDocuments(s string) ([][]byte, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var docs [][]byte
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var probe map[string]any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, err
		}
		if len(probe) > 0 {
			docs = append(docs, doc)
		}
	}
}

// decode reads a document's kind, then decodes it strictly (an unknown or
// duplicated field, or a value of the wrong type, is an error) into the
// Kubernetes type of that kind.
func decode(doc []byte) (manifest, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return manifest{}, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	default:
		return manifest{}, fmt.Errorf("unexpected kind %q of apiVersion %q (the checks know Service, ConfigMap, Secret, Deployment, StatefulSet, Job, PodDisruptionBudget)", tm.Kind, tm.APIVersion)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return manifest{}, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	name := obj.(metav1.Object).GetName()
	return manifest{kind: tm.Kind, name: name, obj: obj}, nil
}

// add indexes m; two objects of one kind and name fail the test.
func (r *release) add(t *testing.T, m manifest) {
	t.Helper()
	for _, o := range r.manifests {
		if o.kind == m.kind && o.name == m.name {
			t.Fatalf("%s %s rendered twice (%s, %s)", m.kind, m.name, o.source, m.source)
		}
	}
	r.manifests = append(r.manifests, m)
	switch o := m.obj.(type) {
	case *corev1.Service:
		r.services[o.Name] = o
	case *corev1.ConfigMap:
		r.configMaps[o.Name] = o
	case *corev1.Secret:
		r.secrets[o.Name] = o
	case *policyv1.PodDisruptionBudget:
		r.pdbs = append(r.pdbs, o)
	case *appsv1.Deployment:
		r.workloads = append(r.workloads, workload{"Deployment", o.Name, replicas(o.Spec.Replicas), "", matchLabels(o.Spec.Selector), &o.Spec.Template})
	case *appsv1.StatefulSet:
		r.workloads = append(r.workloads, workload{"StatefulSet", o.Name, replicas(o.Spec.Replicas), o.Spec.ServiceName, matchLabels(o.Spec.Selector), &o.Spec.Template})
	case *batchv1.Job:
		r.workloads = append(r.workloads, workload{"Job", o.Name, 1, "", nil, &o.Spec.Template})
	}
}

// matchLabels returns a selector's labels; nil for none or for one with
// expressions, which the checks do not evaluate.
func matchLabels(s *metav1.LabelSelector) map[string]string {
	if s == nil || len(s.MatchExpressions) > 0 {
		return nil
	}
	return s.MatchLabels
}

// replicas is a controller's replica count: 1 when unset, as the API server
// defaults it.
func replicas(p *int32) int {
	if p == nil {
		return 1
	}
	return int(*p)
}

// workload returns the workload of the given name, failing the test if none.
func (r *release) workload(t *testing.T, name string) workload {
	t.Helper()
	for _, w := range r.workloads {
		if w.name == name {
			return w
		}
	}
	t.Fatalf("no workload named %s", name)
	return workload{}
}

// container returns the named container of w's pods.
func (w workload) container(t *testing.T, name string) corev1.Container {
	t.Helper()
	for _, c := range w.pod.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s %s has no container %s", w.kind, w.name, name)
	return corev1.Container{}
}

// allContainers returns w's init containers and containers.
func (w workload) allContainers() []corev1.Container {
	return append(append([]corev1.Container(nil), w.pod.Spec.InitContainers...), w.pod.Spec.Containers...)
}

// readRepo reads a file of the repository.
func readRepo(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// containerPtr returns the named container of w's pods, to change it.
func (w workload) containerPtr(t *testing.T, name string) *corev1.Container {
	t.Helper()
	for i := range w.pod.Spec.Containers {
		if w.pod.Spec.Containers[i].Name == name {
			return &w.pod.Spec.Containers[i]
		}
	}
	t.Fatalf("%s %s has no container %s", w.kind, w.name, name)
	return nil
}
