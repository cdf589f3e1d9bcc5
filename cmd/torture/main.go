// Command torture runs stampede's seeded fault-injection checker: the lock,
// cache and reservation workloads against real servers behind fault proxies, and
// the checks of their recorded histories (docs/torture.md).
//
//	torture [-seed N] [-duration 2m] [-workload lock|cache|reserve|all] [-out DIR] [-unsafe] [-near 500ms]
//
// It exits 1 when a check found an anomaly, 2 when the servers could not be
// set up.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
