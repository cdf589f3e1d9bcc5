package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// LostLock runs the reserve load once per reservation mode, from the same
// stock, with oversold units read from the data every second.
type LostLock struct {
	cfg      *Config
	modesRaw string
	modes    []string
	stock    int
}

// Name is "lostlock".
func (*LostLock) Name() string { return "lostlock" }

// Usage is lostlock's paragraph of -h.
func (*LostLock) Usage() string {
	return `the reserve load once per -modes reservation mode (unsafe, lock,
fenced), each from -stock free units per product, with the
-pause-percent knob; the report compares oversold units (read
from the inventories) per mode. Exits non-zero if fenced oversold.`
}

func (l *LostLock) register(fs *flag.FlagSet) {
	fs.StringVar(&l.modesRaw, "modes", "unsafe,lock,fenced",
		"lostlock: the API's reservation modes to run the reserve load in, in order (unsafe, lock, fenced)")
	fs.IntVar(&l.stock, "stock", 20,
		"lostlock: free units of each -skus product at the start of each mode (set through the admin API; restored after)")
}

func (l *LostLock) check() error {
	l.modes = nil
	for _, m := range splitList(l.modesRaw) {
		switch m {
		case "unsafe", "lock", "fenced":
			l.modes = append(l.modes, m)
		default:
			return fmt.Errorf("-modes: %q is not unsafe, lock or fenced", m)
		}
	}
	switch {
	case len(l.modes) == 0:
		return errors.New("-modes is empty")
	case l.stock < 1 || l.stock > 100_000:
		return fmt.Errorf("-stock must be in [1, 100000], got %d", l.stock)
	}
	if err := l.cfg.needAdmin("lostlock"); err != nil {
		return err
	}
	return l.cfg.bounded()
}

// Run runs the reserve load once per -modes mode: it switches every
// replica's mode, gives each product -stock free units, runs the load with
// the pause knob, reads what was oversold, cancels the run's reservations,
// and at the end restores the stocks and the modes it found. It fails when
// fenced mode oversold, when any mode's reservations are not accounted for,
// or when the error rate passes -max-error-rate.
func (l *LostLock) Run(ctx context.Context, e *Env) (err error) {
	cfg, rc := e.cfg, e.cfg.Reserve
	client := e.targets[0]
	var mode struct {
		Mode string `json:"mode"`
	}
	if err := client.AdminGet(ctx, "/admin/reservation-mode", cfg.AdminToken, &mode); err != nil {
		return err
	}
	found, err := readInventories(ctx, client, rc.SKUs)
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = errors.Join(err, e.targets.AdminPut(rctx, "/admin/reservation-mode", cfg.AdminToken, mode))
		for _, id := range rc.SKUs {
			err = errors.Join(err, setStock(rctx, client, cfg.AdminToken, id, found[id].Stock))
		}
	}()

	sum := &LostLockSummary{Scenario: l.Name(), Target: e.targets.String(), Stock: l.stock, Conditions: cfg.Conditions, Machine: startMachine(), Verdict: Verdict{MaxErrorRate: cfg.MaxErrorRate}}
	for _, m := range l.modes {
		run, err := l.runMode(ctx, e, m)
		if err != nil {
			return fmt.Errorf("mode %s: %w", m, err)
		}
		sum.Modes = append(sum.Modes, run)
		fmt.Fprintf(e.stdout, "mode %-6s: %d units oversold, warehouse drift %+d\n", m, run.Oversold, run.Drift)
	}
	var failErr error
	for _, run := range sum.Modes {
		rerr := run.Reserve.check(cfg.MaxErrorRate, cfg.Reserve.MaxBusyRate)
		for _, f := range run.Reserve.Failures {
			sum.Failures = append(sum.Failures, run.Mode+": "+f)
		}
		failErr = errors.Join(failErr, rerr)
		if run.Mode == "fenced" && run.Oversold > 0 {
			msg := fmt.Sprintf("fenced: %d units oversold", run.Oversold)
			sum.Failures = append(sum.Failures, msg)
			failErr = errors.Join(failErr, fmt.Errorf("%w: %s", errInvariant, msg))
		}
	}
	sum.Passed = len(sum.Failures) == 0
	sum.Machine.end()
	if err := e.writeReport(ctx, l.Name(), sum); err != nil {
		return err
	}
	return failErr
}

// runMode is one mode's run: mode switch, stock, load, oversold, cancels.
func (l *LostLock) runMode(ctx context.Context, e *Env, mode string) (_ ModeRun, err error) {
	cfg, rc := e.cfg, e.cfg.Reserve
	client := e.targets[0]
	if err := e.targets.AdminPut(ctx, "/admin/reservation-mode", cfg.AdminToken, map[string]string{"mode": mode}); err != nil {
		return ModeRun{}, err
	}
	now, err := readInventories(ctx, client, rc.SKUs)
	if err != nil {
		return ModeRun{}, err
	}
	for _, id := range rc.SKUs {
		if err := setStock(ctx, client, cfg.AdminToken, id, now[id].Reserved+l.stock); err != nil {
			return ModeRun{}, err
		}
	}

	run := ModeRun{Mode: mode}
	start := time.Now()
	pollCtx, stopPoll := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-pollCtx.Done():
				return
			case <-t.C:
			}
			if inv, err := readInventories(pollCtx, client, rc.SKUs); err == nil {
				run.OversoldAt = append(run.OversoldAt, [2]float64{time.Since(start).Seconds(), float64(oversold(inv))})
			}
		}
	})
	sum, st, err := reserveLoad(ctx, e, mode, false)
	stopPoll()
	wg.Wait()
	if st != nil {
		// Give the units back however the run ended, so the next mode (or
		// the stocks restored at the end) start where this one did.
		defer func() { err = errors.Join(err, st.cancelCreated(ctx, e.targets)) }()
	}
	if err != nil {
		return ModeRun{}, err
	}
	run.Reserve = sum
	after, err := readInventories(ctx, client, rc.SKUs)
	if err != nil {
		return ModeRun{}, err
	}
	run.Oversold = oversold(after)
	run.OversoldAt = append(run.OversoldAt, [2]float64{time.Since(start).Seconds(), float64(run.Oversold)})
	for _, inv := range after {
		run.Drift += inv.Available - (inv.Stock - inv.Reserved)
	}
	return run, nil
}

// cancelCreated settles the run's unknown outcomes, then cancels every
// reservation it made, with a fresh context (the run's may be cancelled).
func (st *reserveState) cancelCreated(ctx context.Context, targets loadgen.Targets) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	st.reconcile(ctx, targets)
	var errs []error
	for i, r := range st.createdRs {
		out, _ := targets.Pick(int64(i)).PostJSON(ctx, "cancel", fmt.Sprintf("/v1/reservations/%d/cancel", r.id), struct{}{}, nil, loadgen.Expect(http.StatusConflict))
		if out.Err != nil {
			errs = append(errs, fmt.Errorf("cancel reservation %d: %w", r.id, out.Err))
		}
	}
	return errors.Join(errs...)
}

// oversold sums reserved beyond stock over the inventories.
func oversold(inv map[int64]Inventory) int {
	n := 0
	for _, i := range inv {
		n += max(0, i.Reserved-i.Stock)
	}
	return n
}

// setStock sets a product's stock through the admin API; the warehouse is
// stocked with what is not reserved.
func setStock(ctx context.Context, c *loadgen.Client, token string, id int64, stock int) error {
	return c.AdminPut(ctx, fmt.Sprintf("/admin/inventory/%d", id), token, map[string]int{"stock": stock})
}
