package chartcheck

import (
	"os"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"
)

// TestValueFilesNameKnownValues: every value that values-scaled.yaml and
// values-kind.yaml set is one the chart's values.yaml has (Helm ignores a
// misspelt key without a word), and the chart renders, strictly decoded,
// with the combinations the kind workflow installs.
func TestValueFilesNameKnownValues(t *testing.T) {
	defaults := readValues(t, chartDir+"/values.yaml")
	kind := readValues(t, "../values-kind.yaml")
	scaled := readValues(t, scaledValues)
	for name, vals := range map[string]map[string]any{"values-kind.yaml": kind, "values-scaled.yaml": scaled} {
		for _, p := range unknownPaths(vals, defaults, "") {
			t.Errorf("%s sets %s, which values.yaml does not have", name, p)
		}
	}
	render(t, kind)
	render(t, loader.MergeMaps(kind, scaled))
}

// readValues reads a values file.
func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// unknownPaths returns the dotted paths of vals that known lacks.
func unknownPaths(vals, known map[string]any, prefix string) []string {
	var out []string
	for k, v := range vals {
		kv, ok := known[k]
		if !ok {
			out = append(out, prefix+k)
			continue
		}
		sub, isMap := v.(map[string]any)
		if ksub, kIsMap := kv.(map[string]any); isMap && kIsMap {
			out = append(out, unknownPaths(sub, ksub, prefix+k+".")...)
		}
	}
	return out
}
