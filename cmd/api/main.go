// Command api serves the stampede product catalog over HTTP.
//
//	api [serve]           migrate, then serve until SIGTERM or SIGINT (default)
//	api migrate           apply the database migrations and exit
//	api seed [-scale 1]   load the deterministic demo catalog (once) and exit
//	api healthcheck       exit 0 when -url answers 200 within 2s
//	api help              list the commands and flags (also -h)
//
// Configuration comes from flags with environment fallbacks; `api -h` lists
// them.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}
