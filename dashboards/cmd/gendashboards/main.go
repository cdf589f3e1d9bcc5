// Command gendashboards writes stampede's Grafana dashboards as JSON files.
//
//	gendashboards [-dir dashboards/generated]
//
// It writes one <name>.json per dashboard of package dashboards into -dir and
// removes the other .json files there, so that the directory holds exactly
// the generated dashboards. The output is deterministic: run it (make
// dashboards) after changing a dashboard and commit the result.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stampede-lab/stampede/dashboards"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gendashboards:", err)
		os.Exit(1)
	}
}

// run parses args, generates the dashboards and writes them, reporting each
// file on stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gendashboards", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", filepath.Join("dashboards", "generated"), "directory to write the dashboard JSON files into")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	gen, err := dashboards.All()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, g := range gen {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(*dir, g.File)
		if err := os.WriteFile(path, g.JSON, 0o644); err != nil {
			return err
		}
		keep[g.File] = true
		fmt.Fprintf(stdout, "wrote %s (%s)\n", path, g.UID)
	}
	entries, err := os.ReadDir(*dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || keep[e.Name()] {
			continue
		}
		path := filepath.Join(*dir, e.Name())
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed %s: not a generated dashboard\n", path)
	}
	return nil
}
