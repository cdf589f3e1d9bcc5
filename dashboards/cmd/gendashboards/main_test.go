package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stampede-lab/stampede/dashboards"
)

func TestRunWritesExactlyTheDashboards(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "old.json")
	if err := os.WriteFile(stale, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, "README.md")
	if err := os.WriteFile(keep, []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-dir", dir}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	gen, err := dashboards.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gen {
		got, err := os.ReadFile(filepath.Join(dir, g.File))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, g.JSON) {
			t.Errorf("%s differs from dashboards.All", g.File)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s not removed (%v)", stale, err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("non-JSON file removed: %v", err)
	}
	if out.Len() == 0 {
		t.Error("nothing reported on stdout")
	}
}

func TestRunRejectsArguments(t *testing.T) {
	if err := run(context.Background(), []string{"extra"}, io.Discard, io.Discard); err == nil {
		t.Error("run with a stray argument: no error")
	}
}
