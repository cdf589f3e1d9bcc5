package main

import (
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHelp runs the api's -h, -help, --help and help (also after a
// subcommand, and with a bad setting in the environment): each succeeds,
// writes nothing to stderr, and prints one line per subcommand, each of which
// the api accepts, and every flag.
func TestHelp(t *testing.T) {
	wantCommands := []string{"serve", "migrate", "seed", "healthcheck", "help"}
	wantFlags := []string{"admin-token", "cache-timeout", "database-url", "drain", "hold-ttl", "http-addr", "lock-redis-urls", "log-format",
		"log-level", "migrate", "pending-age", "redis-autopipeline", "redis-cluster-url", "redis-url", "reservation-mode", "reuse-decoded", "scale", "sweep-every", "url"}
	commandLine := regexp.MustCompile(`^  ([a-z]+) +\S`)
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"help"}, {"serve", "-h"}, {"seed", "--help"}, {"help", "-h"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			env := map[string]string{"MIGRATE": "maybe"}
			if err := run(context.Background(), args, func(k string) string { return env[k] }, &stdout, &stderr); err != nil {
				t.Fatalf("run(%q) = %v, want nil (exit 0)", args, err)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr: %q, want nothing", stderr.String())
			}
			out := stdout.String()
			section := out[strings.Index(out, "commands:\n")+len("commands:\n"):]
			section = section[:strings.Index(section, "\n\n")]
			var got []string
			for line := range strings.Lines(section) {
				m := commandLine.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("command line %q is not `  name  what it does`", line)
				}
				got = append(got, m[1])
			}
			if !slices.Equal(got, wantCommands) {
				t.Errorf("commands listed: %q, want %q\n%s", got, wantCommands, out)
			}
			for _, name := range got {
				if name == "help" {
					continue
				}
				if _, _, err := parseConfig([]string{name}, func(string) string { return "" }, io.Discard); err != nil {
					t.Errorf("listed command %s is refused: %v", name, err)
				}
			}
			for _, f := range wantFlags {
				if !regexp.MustCompile(`(?m)^  -` + f + `\b`).MatchString(out) {
					t.Errorf("flag -%s is not listed:\n%s", f, out)
				}
			}
		})
	}
	for _, args := range [][]string{{"help", "seed"}, {"-nope"}, {"helpme"}} {
		var stdout strings.Builder
		if err := run(context.Background(), args, func(string) string { return "" }, &stdout, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}

// TestBoolSettings checks that every boolean environment setting takes
// exactly what strconv.ParseBool accepts, falls back to its default when
// unset, and refuses anything else with an error that names the variable,
// the value and the accepted values.
func TestBoolSettings(t *testing.T) {
	settings := []struct {
		env string
		def bool
		get func(config) bool
	}{
		{"MIGRATE", true, func(c config) bool { return c.migrate }},
		{"REDIS_AUTOPIPELINE", true, func(c config) bool { return c.autoPipeline }},
	}
	tests := []struct {
		value string
		want  bool
		ok    bool
	}{
		{"", true, true}, // unset: the setting's default (want is ignored)
		{"1", true, true}, {"t", true, true}, {"T", true, true}, {"TRUE", true, true}, {"true", true, true}, {"True", true, true},
		{"0", false, true}, {"f", false, true}, {"F", false, true}, {"FALSE", false, true}, {"false", false, true}, {"False", false, true},
		{"yes", false, false}, {"no", false, false}, {"on", false, false}, {"off", false, false}, {"y", false, false},
		{"2", false, false}, {"tRUE", false, false}, {" true", false, false}, {"false ", false, false}, {"enabled", false, false},
	}
	for _, s := range settings {
		for _, tt := range tests {
			t.Run(s.env+"="+tt.value, func(t *testing.T) {
				getenv := func(k string) string {
					if k == s.env {
						return tt.value
					}
					return ""
				}
				_, c, err := parseConfig(nil, getenv, io.Discard)
				if !tt.ok {
					if err == nil {
						t.Fatalf("%s=%q accepted (as %v)", s.env, tt.value, s.get(c))
					}
					for _, want := range []string{s.env, `"` + tt.value + `"`, boolValues} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not say %q", err, want)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("%s=%q refused: %v", s.env, tt.value, err)
				}
				want := tt.want
				if tt.value == "" {
					want = s.def
				}
				if got := s.get(c); got != want {
					t.Errorf("%s=%q gave %v, want %v", s.env, tt.value, got, want)
				}
			})
		}
		// Through run, as main calls it: a refused value is an error (exit
		// 1) before anything connects. The addresses are dead ones, so that
		// code accepting the value cannot reach a shared server either.
		t.Run(s.env+" through run", func(t *testing.T) {
			env := map[string]string{s.env: "yes", "HTTP_ADDR": "127.0.0.1:0", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?connect_timeout=1",
				"REDIS_URL": "redis://127.0.0.1:1"}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, nil, func(k string) string { return env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), s.env) {
				t.Fatalf("run with %s=yes: %v, want an error naming %s", s.env, err, s.env)
			}
		})
	}
}

// TestReuseDecodedSetting: REUSE_DECODED takes a whole number from 0 (off) to
// 2^20, 4096 when unset, and refuses anything else by name.
func TestReuseDecodedSetting(t *testing.T) {
	for value, want := range map[string]int{"": 4096, "0": 0, "1": 1, "1048576": 1 << 20} {
		_, c, err := parseConfig(nil, func(k string) string { return map[string]string{"REUSE_DECODED": value}[k] }, io.Discard)
		if err != nil || c.reuseDecoded != want {
			t.Errorf("REUSE_DECODED=%q: %d, %v; want %d", value, c.reuseDecoded, err, want)
		}
	}
	for _, value := range []string{"-1", "1048577", "1e3", "lots", "12\x00"} {
		_, _, err := parseConfig(nil, func(k string) string { return map[string]string{"REUSE_DECODED": value}[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "reuse-decoded") {
			t.Errorf("REUSE_DECODED=%q: %v, want an error naming -reuse-decoded", value, err)
		}
	}
}

// TestCacheTimeoutSetting: CACHE_TIMEOUT takes a duration from 1ms to 10s,
// 100ms when unset, and refuses anything else by name.
func TestCacheTimeoutSetting(t *testing.T) {
	for value, want := range map[string]time.Duration{"": 100 * time.Millisecond, "1ms": time.Millisecond, "1s": time.Second, "10s": 10 * time.Second} {
		_, c, err := parseConfig(nil, func(k string) string { return map[string]string{"CACHE_TIMEOUT": value}[k] }, io.Discard)
		if err != nil || c.cacheTimeout != want {
			t.Errorf("CACHE_TIMEOUT=%q: %v, %v; want %v", value, c.cacheTimeout, err, want)
		}
	}
	for _, value := range []string{"0", "-1s", "999us", "11s", "100", "soon", "1s\x00"} {
		_, _, err := parseConfig(nil, func(k string) string { return map[string]string{"CACHE_TIMEOUT": value}[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "cache-timeout") {
			t.Errorf("CACHE_TIMEOUT=%q: %v, want an error naming -cache-timeout", value, err)
		}
	}
}
