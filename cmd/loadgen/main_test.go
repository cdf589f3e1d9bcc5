package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/scenario"
)

func noEnv(string) string { return "" }

func TestRunHelpExplainsEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, noEnv, &stdout, &stderr); err != nil {
		t.Fatalf("run -h: %v", err)
	}
	help := stderr.String()
	for _, want := range []string{
		"-target", `(default "http://127.0.0.1:8080")`,
		"-allow-remote",
		"-rate", "(default 50)",
		"-duration", "(default 30s)",
		"-max-requests", "default 0",
		"default off",
		"-max-in-flight", "(default 256)",
		"-metrics-addr", `(default "127.0.0.1:9102")`,
		"-outage-for", "-burst-every", "(default 3m0s)", "-zipf-s", "-skus", "-phases",
		"-slo-p99", "(default 250ms)", "-step-factor", "(default 1.5)", "-step-duration", "(default 10s)", "-max-rate", "(default 5000)", "-classes",
		"-trace-sample", "(default 1)", "-jaeger-url", "traceparent",
		"stampede ", "browse ", "reserve ", "capacity ", "demo ",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
}

func TestRunValidatesFlags(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		args []string
		env  map[string]string
		want error // nil: any non-nil error other than scenario.ErrNoScenario
	}{
		{args: nil, want: scenario.ErrNoScenario},
		{args: []string{"-target", "http://localhost:9000", "-rate", "10", "-duration", "0", "-max-requests", "5"}, want: scenario.ErrNoScenario},
		{args: []string{"-target", "http://10.0.0.1:8080"}, want: loadgen.ErrRemoteTarget},
		{args: []string{"-target", "http://example.org"}, want: loadgen.ErrRemoteTarget},
		{args: []string{"-target", "http://example.org", "-allow-remote"}, want: scenario.ErrNoScenario},
		{env: map[string]string{"LOADGEN_TARGET": "http://api:8080"}, want: loadgen.ErrRemoteTarget},
		{args: []string{"-allow-remote"}, env: map[string]string{"LOADGEN_TARGET": "http://api:8080"}, want: scenario.ErrNoScenario},
		{args: []string{"-rate", "0"}},
		{args: []string{"-rate", "+Inf"}},
		{args: []string{"-rate", "NaN"}},
		{args: []string{"-rate", "1e300"}},
		{args: []string{"-rate", "1e-12"}},
		{args: []string{"-admin-token", "t", "-burst-rate", "+Inf", "demo"}},
		{args: []string{"-admin-token", "t", "-demo-reserve-rate", "+Inf", "demo"}},
		{args: []string{"-admin-token", "t", "-demo-reserve-rate", "-1", "demo"}},
		{args: []string{"-hot-keys", "2000000000"}},
		{args: []string{"-duration", "0", "-max-requests", "0", "browse"}},
		{args: []string{"-target", "http://127.0.0.1:1", "stampede"}}, // no admin token
		{args: []string{"-max-in-flight", "0"}},
		{args: []string{"-step-factor", "1", "capacity"}}, // the rate would never rise
		{args: []string{"-classes", "checkout", "capacity"}},
		{args: []string{"-slo-p99", "-1s", "capacity"}},
		{args: []string{"-no-such-flag"}},
		{args: []string{"-trace-sample", "1.5"}},
		{args: []string{"-trace-sample", "-0.1"}},
		{args: []string{"-trace-sample", "NaN"}},
		{args: []string{"-jaeger-url", "ftp://127.0.0.1:16686"}},
		{args: []string{"-jaeger-url", "http://10.0.0.1:16686"}, want: loadgen.ErrRemoteTarget},
		{args: []string{"-jaeger-url", "http://jaeger:16686", "-allow-remote"}, want: scenario.ErrNoScenario},
		{args: []string{"-trace-sample", "0", "-jaeger-url", "http://127.0.0.1:16686/"}, want: scenario.ErrNoScenario},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), c.args, env(c.env), &stdout, &stderr)
		switch {
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("run(%q, env %v) = %v, want %v", c.args, c.env, err, c.want)
		case c.want == nil && (err == nil || errors.Is(err, scenario.ErrNoScenario)):
			t.Errorf("run(%q) = %v, want a validation error", c.args, err)
		}
	}
}

// TestRunRefusesARemoteReplicaInTheList: one non-loopback URL among the
// replicas is enough to refuse the run.
func TestRunRefusesARemoteReplicaInTheList(t *testing.T) {
	err := run(t.Context(), []string{"-target", "http://127.0.0.1:1,http://10.0.0.1:2", "browse"}, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.Is(err, loadgen.ErrRemoteTarget) {
		t.Errorf("run = %v, want ErrRemoteTarget", err)
	}
}
