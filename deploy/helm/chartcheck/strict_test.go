package chartcheck

import (
	"strings"
	"testing"
)

// TestStrictDecoding: the decoding render uses refuses what the API server
// would refuse or silently drop: an unknown field, a value of the wrong
// type, a field given twice, an unknown kind; and accepts the same object
// unbroken.
func TestStrictDecoding(t *testing.T) {
	const good = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
spec:
  replicas: 2
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: x
          image: x:1
          ports:
            - containerPort: 8080
`
	if _, err := decode([]byte(good)); err != nil {
		t.Fatalf("the unbroken Deployment: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field":        strings.Replace(good, "  replicas: 2\n", "  replicas: 2\n  replica: 2\n", 1),
		"misplaced field":      strings.Replace(good, "          image: x:1\n", "          image: x:1\n          containerPort: 8080\n", 1),
		"wrong type":           strings.Replace(good, "replicas: 2", `replicas: "two"`, 1),
		"wrong type in a list": strings.Replace(good, "containerPort: 8080", "containerPort: http", 1),
		"duplicate field":      strings.Replace(good, "  replicas: 2\n", "  replicas: 2\n  replicas: 3\n", 1),
		"unknown kind":         strings.Replace(good, "kind: Deployment", "kind: Deploymnet", 1),
		"wrong apiVersion":     strings.Replace(good, "apiVersion: apps/v1", "apiVersion: extensions/v1beta1", 1),
	} {
		if _, err := decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// TestBadValuesFailToRender: values the chart cannot honour stop the render
// with a message that names the value.
func TestBadValuesFailToRender(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"cache": map[string]any{"mode": "sentinel"}}, "cache.mode"},
		{map[string]any{"api": map[string]any{"replicas": 0}}, "api.replicas"},
		{map[string]any{"lock": map[string]any{"masters": 0}}, "lock.masters"},
		{map[string]any{"cache": map[string]any{"mode": "cluster", "cluster": map[string]any{"masters": 2}}}, "cache.cluster.masters"},
	} {
		if _, err := renderFiles(tc.values); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %v: %v, want an error naming %s", tc.values, err, tc.want)
		}
	}
}
