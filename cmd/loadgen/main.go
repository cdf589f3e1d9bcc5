// Command loadgen drives the stampede API with open-model load and measures
// client latency from each request's scheduled start (no coordinated
// omission).
//
//	loadgen [flags] scenario
//
// Scenarios: stampede, browse, reserve, lostlock, capacity, near and demo (see -h;
// the code is in internal/loadgen/scenario). It only ever talks to the
// -target URLs and, when given, -pause-demo and -jaeger-url, which must be
// loopback addresses unless -allow-remote is given. Every request carries a
// W3C traceparent (-trace-sample of them flagged sampled), and each report
// lists the trace ids of every phase's slowest sampled requests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/stampede-lab/stampede/internal/loadgen/scenario"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// run parses args (getenv supplies the fallbacks of -target,
// -metrics-addr, -admin-token, -jaeger-url and -conditions: LOADGEN_TARGET,
// LOADGEN_METRICS_ADDR, ADMIN_TOKEN, JAEGER_URL, LOADGEN_CONDITIONS) and
// runs the scenario they name, or replot. -h prints usage to stderr and returns nil. Nothing connects before
// the flags have been validated.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	s, cfg, err := scenario.ParseArgs(args, getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil
	case err != nil:
		return err
	case s == nil:
		return scenario.Replot(cfg.ReportDir, stdout)
	}
	return scenario.Run(ctx, s, cfg, stdout, stderr)
}
