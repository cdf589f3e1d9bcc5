package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/torture"
)

// Exit codes.
const (
	exitOK      = 0
	exitAnomaly = 1
	exitSetup   = 2
)

// run parses args, runs the workloads in turn and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		seed     = fs.Uint64("seed", 0, "seed of the fault schedule and the workloads; 0 draws one (printed first, to rerun a failure)")
		duration = fs.Duration("duration", 2*time.Minute, "how long to run, shared by the workloads")
		workload = fs.String("workload", "all", "lock, cache, reserve or all")
		out      = fs.String("out", "torture-out", "directory for summary.json and, on a failure, the linearizability visualisation")
		unsafe   = fs.Bool("unsafe", false, "check the checker: the lock workload without fencing at the register, the cache workload through a naive unguarded cache, the reserve workload with the order of effects before the saga (-flaws give-first); anomalies are expected")
		near     = fs.Duration("near", 0, "cache workload: the near-cache variant (one standalone Redis, go-redis client-side caching with this MaxStaleness, e.g. 500ms), checked for bounded staleness; with -unsafe its near caches drop invalidation pushes")
		apiBin   = fs.String("api-bin", "", "the cmd/api binary the reserve workload attacks; empty builds it from this module")
		flaws    = fs.String("flaws", "", "reserve workload: checker-only flaws the API processes run with (cmd/api -flaws), comma-separated: give-first, abandon-unlooked; anomalies are expected")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitSetup
	}
	if *seed == 0 {
		*seed = rand.Uint64()
	}
	type step struct {
		name string
		run  func(context.Context, time.Duration) (*torture.Result, error)
	}
	lock := func(nodes int) step {
		return step{fmt.Sprintf("lock, %d node(s)", nodes), func(ctx context.Context, d time.Duration) (*torture.Result, error) {
			return torture.RunLock(ctx, torture.LockConfig{Seed: *seed, Duration: d, Nodes: nodes, Unsafe: *unsafe})
		}}
	}
	cache := step{"cache", func(ctx context.Context, d time.Duration) (*torture.Result, error) {
		return torture.RunCache(ctx, torture.CacheConfig{Seed: *seed, Duration: d, Unsafe: *unsafe, Near: *near})
	}}
	reserve := step{"reserve", func(ctx context.Context, d time.Duration) (*torture.Result, error) {
		cfg := torture.ReserveConfig{Seed: *seed, Duration: d, OutDir: *out, APIBinary: *apiBin}
		if *flaws != "" {
			cfg.Flaws = strings.Split(*flaws, ",")
		}
		if *unsafe {
			cfg.Flaws = append(cfg.Flaws, torture.FlawGiveFirst)
		}
		return torture.RunReserve(ctx, cfg)
	}}
	var steps []step
	switch *workload {
	case "lock":
		steps = []step{lock(1), lock(3), lock(5)}
	case "cache":
		steps = []step{cache}
	case "reserve":
		steps = []step{reserve}
	case "all":
		steps = []step{lock(1), lock(3), lock(5), cache, reserve}
	default:
		fmt.Fprintf(stderr, "torture: -workload %q: want lock, cache, reserve or all\n", *workload)
		return exitSetup
	}
	each := *duration / time.Duration(len(steps))
	if each < 5*time.Second {
		fmt.Fprintf(stderr, "torture: -duration %v gives each of %d runs less than 5s\n", *duration, len(steps))
		return exitSetup
	}
	fmt.Fprintf(stdout, "torture: seed %d, %v per run (rerun: %s)\n", *seed, each, rerun(fs, *seed))

	var results []*torture.Result
	anomalies := 0
	for _, s := range steps {
		fmt.Fprintf(stdout, "torture: %s ...\n", s.name)
		stop := progress(stdout, s.name, each)
		res, err := s.run(ctx, each)
		stop()
		if err != nil {
			fmt.Fprintln(stderr, "torture:", err)
			return exitSetup
		}
		res.Print(stdout)
		results = append(results, res)
		anomalies += len(res.Anomalies)
		if ctx.Err() != nil {
			break
		}
	}
	path, err := torture.WriteSummary(*out, results)
	if err != nil {
		fmt.Fprintln(stderr, "torture:", err)
		return exitSetup
	}
	fmt.Fprintf(stdout, "torture: %d anomalies; summary %s\n", anomalies, path)
	if anomalies > 0 {
		return exitAnomaly
	}
	return exitOK
}

// progress prints a line every 10 s while a run goes on; stop returns once
// it prints no more, so that nothing else writes to w beside it.
func progress(w io.Writer, name string, d time.Duration) (stop func()) {
	done := make(chan struct{})
	start := time.Now()
	var printing sync.WaitGroup
	printing.Go(func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "torture: %s %v / %v\n", name, time.Since(start).Round(time.Second), d)
			}
		}
	})
	return func() { close(done); printing.Wait() }
}

// rerun is the command line that runs the same schedule again: the seed,
// -duration and -workload, and every other flag given (-near, -unsafe,
// -api-bin), so that a variant reruns as itself. -out is left to the user.
func rerun(fs *flag.FlagSet, seed uint64) string {
	args := []string{"torture", "-seed=" + strconv.FormatUint(seed, 10)}
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case f.Name == "seed" || f.Name == "out":
		case f.Name == "duration" || f.Name == "workload" || f.Value.String() != f.DefValue:
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	return strings.Join(args, " ")
}
