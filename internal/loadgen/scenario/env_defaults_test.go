package scenario

import (
	"io"
	"testing"
)

// TestRunLocalEnvSetsTheDefaults: the variables make run-local writes to
// .run/env (and LOADGEN_CONDITIONS) become the flags' defaults, so that
// after `set -a; . .run/env; set +a` a command without -target or
// -metrics-addr loads the stack run-local started; a flag given wins.
func TestRunLocalEnvSetsTheDefaults(t *testing.T) {
	env := map[string]string{
		"LOADGEN_TARGET": "http://127.0.0.1:18080", "LOADGEN_METRICS_ADDR": "127.0.0.1:19102",
		"ADMIN_TOKEN": "local-admin", "JAEGER_URL": "http://127.0.0.1:24000", "LOADGEN_CONDITIONS": "busy",
	}
	getenv := func(k string) string { return env[k] }
	_, cfg, err := ParseArgs([]string{"stampede"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Targets[0].String(); got != env["LOADGEN_TARGET"] || cfg.MetricsAddr != env["LOADGEN_METRICS_ADDR"] ||
		cfg.AdminToken != "local-admin" || cfg.JaegerURL != env["JAEGER_URL"] || cfg.Conditions != "busy" {
		t.Errorf("from the environment: target %s, metrics %q, token %q, jaeger %q, conditions %q", got, cfg.MetricsAddr, cfg.AdminToken, cfg.JaegerURL, cfg.Conditions)
	}
	_, cfg, err = ParseArgs([]string{"-target", "http://127.0.0.1:8080", "-metrics-addr", "", "stampede"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Targets[0].String(); got != "http://127.0.0.1:8080" || cfg.MetricsAddr != "" {
		t.Errorf("flags given: target %s, metrics %q", got, cfg.MetricsAddr)
	}
	_, cfg, err = ParseArgs([]string{"stampede"}, func(string) string { return "" }, io.Discard)
	if err == nil {
		t.Fatal("stampede without a token was accepted")
	}
	_, cfg, err = ParseArgs([]string{"browse"}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.MetricsAddr != defaultMetricsAddr || cfg.Targets[0].String() != defaultTarget {
		t.Errorf("no environment: %v, metrics %q, target %v", err, cfg.MetricsAddr, cfg.Targets)
	}
}
