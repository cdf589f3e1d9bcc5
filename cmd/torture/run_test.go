package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// TestRunRefusesBadFlags: exit 2 before anything starts.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-workload", "everything"}, {"-duration", "1s"}, {"-nope"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, &out); code != exitSetup {
			t.Errorf("%q: exit %d, want %d", args, code, exitSetup)
		}
	}
}
