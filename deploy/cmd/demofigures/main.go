// Command demofigures reads a recorded demo back from Prometheus and prints
// the live demo's table of what the demo shows (docs/running.md): for the steady load, the ttl
// bursts and the xfetch bursts, the category_stats recomputes, its database
// queries, the burst's client p99, the hit ratio and the alerts that fired.
//
//	set -a; . .run/env; set +a                  # PROMETHEUS_URL, from make run-local
//	go run ./deploy/cmd/demofigures -since 30m  # or -start/-end, RFC 3339
//
// Each sample (every 5 s, the demo's scrape interval) is classed by the load
// generator's stampede traffic and the category_stats strategy in force: a
// burst sample has stampede requests in the last 15 s; a steady one had none
// in the last minute (so a burst's one-minute rates have left the window);
// samples in between are left out. A numeric row gives the median and the
// highest of its samples.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }

type config struct {
	prom       string
	start, end time.Time
	out, title string
	args       []string // as given, for the report's first lines
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, getenv, time.Now(), stderr)
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(stderr, "demofigures:", err)
		}
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fig, err := measure(ctx, c.prom, c.start, c.end)
	if err != nil {
		fmt.Fprintln(stderr, "demofigures:", err)
		return 1
	}
	w := stdout
	if c.out != "" {
		f, err := os.Create(c.out)
		if err != nil {
			fmt.Fprintln(stderr, "demofigures:", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	if c.title != "" {
		fmt.Fprintf(w, "# %s\n\nWritten by `go run ./deploy/cmd/demofigures %s`.\n\n", c.title, shellJoin(c.args))
	}
	if err := fig.writeTable(w); err != nil {
		fmt.Fprintln(stderr, "demofigures:", err)
		return 1
	}
	return 0
}

// parseFlags reads the flags; -prom defaults to $PROMETHEUS_URL (which make
// run-local writes to .run/env), then to Prometheus's default address.
func parseFlags(args []string, getenv func(string) string, now time.Time, stderr io.Writer) (config, error) {
	var c config
	var since time.Duration
	var start, end string
	prom := getenv("PROMETHEUS_URL")
	if prom == "" {
		prom = "http://127.0.0.1:9090"
	}
	fs := flag.NewFlagSet("demofigures", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.prom, "prom", prom, "Prometheus base URL ($PROMETHEUS_URL)")
	fs.DurationVar(&since, "since", 30*time.Minute, "the recording is the last `duration` (unless -start is given)")
	fs.StringVar(&start, "start", "", "start of the recording, RFC 3339")
	fs.StringVar(&end, "end", "", "end of the recording, RFC 3339 (default now)")
	fs.StringVar(&c.out, "o", "", "write the table to `file` instead of stdout")
	fs.StringVar(&c.title, "title", "", "start with a heading and the command line (a report to commit)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.args = args
	c.end = now
	if end != "" {
		t, err := time.Parse(time.RFC3339, end)
		if err != nil {
			return c, fmt.Errorf("-end: %v", err)
		}
		c.end = t
	}
	c.start = c.end.Add(-since)
	if start != "" {
		t, err := time.Parse(time.RFC3339, start)
		if err != nil {
			return c, fmt.Errorf("-start: %v", err)
		}
		c.start = t
	}
	if !c.start.Before(c.end) {
		return c, fmt.Errorf("the recording's start %s is not before its end %s", c.start.Format(time.RFC3339), c.end.Format(time.RFC3339))
	}
	return c, nil
}

// shellJoin joins args as a shell would read them back: an argument with a
// space or quote in single quotes.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " '\"$`\\") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
