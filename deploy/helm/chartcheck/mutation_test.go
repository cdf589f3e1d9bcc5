package chartcheck

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestChecksCatchBreakage breaks a rendered release in one way at a time and
// expects the wiring checks to report it: a check that passes whatever the
// chart says proves nothing.
func TestChecksCatchBreakage(t *testing.T) {
	env := func(r *release, t *testing.T, workload, container, name string) *corev1.EnvVar {
		c := r.workload(t, workload).containerPtr(t, container)
		for i := range c.Env {
			if c.Env[i].Name == name {
				return &c.Env[i]
			}
		}
		t.Fatalf("%s/%s has no env %s", workload, container, name)
		return nil
	}
	cases := []struct {
		name  string
		check func(*release) []error
		want  string
		brk   func(*release, *testing.T)
	}{
		{"a Service selecting nothing", checkSelectors, "selects the pods of 0", func(r *release, _ *testing.T) {
			r.services["api"].Spec.Selector["app.kubernetes.io/name"] = "apii"
		}},
		{"a Service port targeting no container port", checkSelectors, "which no container", func(r *release, _ *testing.T) {
			r.services["postgres"].Spec.Ports[0].TargetPort = intstr.FromString("pg")
		}},
		{"a StatefulSet governed by a missing Service", checkSelectors, "serviceName", func(r *release, t *testing.T) {
			for i := range r.workloads {
				if r.workloads[i].name == "api" {
					r.workloads[i].serviceName = "api-gone"
				}
			}
		}},
		{"a misspelt database host", checkAddresses, "postgress", func(r *release, t *testing.T) {
			e := env(r, t, "api", "api", "DATABASE_URL")
			e.Value = strings.Replace(e.Value, "@postgres:", "@postgress:", 1)
		}},
		{"a lock master that does not exist", checkAddresses, "redis-lock-9", func(r *release, t *testing.T) {
			env(r, t, "api", "api", "LOCK_REDIS_URLS").Value += ",redis://redis-lock-9:6379"
		}},
		{"a wrong port", checkAddresses, "port", func(r *release, t *testing.T) {
			e := env(r, t, "api", "api", "OTEL_EXPORTER_OTLP_ENDPOINT")
			e.Value = "http://jaeger:4317"
		}},
		{"an API instance beyond the replicas", checkAddresses, "api-7", func(r *release, _ *testing.T) {
			cm := r.configMaps["prometheus"]
			cm.Data["prometheus.yml"] = strings.Replace(cm.Data["prometheus.yml"], "api-0.api-headless:8080", "api-7.api-headless:8080", 1)
		}},
		{"pod names behind a Service that is not headless", checkAddresses, "not headless", func(r *release, _ *testing.T) {
			r.services["api-headless"].Spec.ClusterIP = ""
		}},
		{"a missing Secret key", checkReferences, "tokn", func(r *release, t *testing.T) {
			env(r, t, "api", "api", "ADMIN_TOKEN").ValueFrom.SecretKeyRef.Key = "tokn"
		}},
		{"a mount of a missing volume", checkReferences, "volume", func(r *release, t *testing.T) {
			c := r.workload(t, "prometheus").containerPtr(t, "prometheus")
			c.VolumeMounts[0].Name = "confi"
		}},
		{"a probe on an undeclared port", checkReferences, "probe", func(r *release, t *testing.T) {
			c := r.workload(t, "api").containerPtr(t, "api")
			c.ReadinessProbe.HTTPGet.Port = intstr.FromString("htp")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, nil)
			if errs := tc.check(r); len(errs) > 0 {
				t.Fatalf("the unbroken release fails the check: %v", errs)
			}
			tc.brk(r, t)
			errs := tc.check(r)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Errorf("no error mentions %q after the change; got %v", tc.want, errs)
		})
	}
}
