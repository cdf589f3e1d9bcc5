package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func noEnv(string) string { return "" }

func TestValidateTarget(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:8080", "http://127.1.2.3", "http://localhost:8080", "https://LOCALHOST",
		"http://[::1]:8080", "http://[::1]",
	} {
		if _, err := validateTarget(raw, false); err != nil {
			t.Errorf("validateTarget(%q) = %v, want accepted", raw, err)
		}
	}
	for _, raw := range []string{
		"http://10.0.0.1:8080", "http://example.org", "http://localhost.example.org", "http://0.0.0.0:8080",
		"http://[::]:8080", "http://[2001:db8::1]", "http://128.0.0.1",
	} {
		if _, err := validateTarget(raw, false); !errors.Is(err, ErrRemoteTarget) {
			t.Errorf("validateTarget(%q) = %v, want ErrRemoteTarget", raw, err)
		}
		// Allowed explicitly; validation never resolves or connects.
		if _, err := validateTarget(raw, true); err != nil {
			t.Errorf("validateTarget(%q, allowRemote) = %v", raw, err)
		}
	}
	for _, raw := range []string{"127.0.0.1:8080", "ftp://127.0.0.1", "http://", "http://%zz"} {
		if _, err := validateTarget(raw, true); err == nil {
			t.Errorf("validateTarget(%q) accepted a malformed target", raw)
		}
	}
}

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
		"stampede ", "browse ", "reserve ", "demo ",
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
		want error // nil: any non-nil error other than errNoScenario
	}{
		{args: nil, want: errNoScenario},
		{args: []string{"-target", "http://localhost:9000", "-rate", "10", "-duration", "0", "-max-requests", "5"}, want: errNoScenario},
		{args: []string{"-target", "http://10.0.0.1:8080"}, want: ErrRemoteTarget},
		{args: []string{"-target", "http://example.org"}, want: ErrRemoteTarget},
		{args: []string{"-target", "http://example.org", "-allow-remote"}, want: errNoScenario},
		{env: map[string]string{"LOADGEN_TARGET": "http://api:8080"}, want: ErrRemoteTarget},
		{args: []string{"-allow-remote"}, env: map[string]string{"LOADGEN_TARGET": "http://api:8080"}, want: errNoScenario},
		{args: []string{"-rate", "0"}},
		{args: []string{"-duration", "0", "-max-requests", "0"}},
		{args: []string{"-max-in-flight", "0"}},
		{args: []string{"-no-such-flag"}},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), c.args, env(c.env), &stdout, &stderr)
		switch {
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("run(%q, env %v) = %v, want %v", c.args, c.env, err, c.want)
		case c.want == nil && (err == nil || errors.Is(err, errNoScenario)):
			t.Errorf("run(%q) = %v, want a validation error", c.args, err)
		}
	}
}
