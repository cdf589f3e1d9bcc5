package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunWritesTheSummary runs the reserve workload briefly with a fixed
// seed: exit 0, the seed printed first, summary.json written.
func TestRunWritesTheSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers and fault injection")
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-seed", "11", "-duration", "6s", "-workload", "reserve", "-out", dir}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(stdout.String(), "torture: seed 11,") {
		t.Errorf("the seed is not printed first")
	}
	if !strings.Contains(stdout.String(), "(rerun: torture -seed=11 -duration=6s -workload=reserve)") {
		t.Errorf("the first line does not name the command that reruns the run")
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Workload string `json:"workload"`
		Seed     uint64 `json:"seed"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 || got[0].Workload != "reserve" || got[0].Seed != 11 {
		t.Errorf("summary %s (%v)", b, err)
	}
}

// TestRerunKeepsTheVariant: the rerun command carries every flag given
// but -out (a near-cache or unsafe run reruns as itself) and the drawn seed.
func TestRerunKeepsTheVariant(t *testing.T) {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.Uint64("seed", 0, "")
	fs.Duration("duration", 2*time.Minute, "")
	fs.String("workload", "all", "")
	fs.String("out", "torture-out", "")
	fs.Duration("near", 0, "")
	fs.Bool("unsafe", false, "")
	if err := fs.Parse([]string{"-workload", "cache", "-near", "500ms", "-unsafe", "-out", "x"}); err != nil {
		t.Fatal(err)
	}
	want := "torture -seed=7 -duration=2m0s -near=500ms -unsafe=true -workload=cache"
	if got := rerun(fs, 7); got != want {
		t.Errorf("rerun = %q, want %q", got, want)
	}
}

// TestRunRefusesBadFlags: exit 2 before anything starts.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workload", "everything"}, {"-duration", "1s"}, {"-nope"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != exitSetup {
			t.Errorf("%q: exit %d, want %d", args, code, exitSetup)
		}
	}
}
