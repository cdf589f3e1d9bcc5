package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/loadgen"
)

// The reservation endpoint's label and the largest quantity reserved.
const (
	reserveEndpoint    = "reserve"
	maxReserveQuantity = 3
)

// Problem types of the reservation endpoint's refusals (docs/api.md).
const (
	problemInsufficient = "/problems/insufficient-stock"
	problemFenced       = "/problems/fenced"
	problemBusy         = "/problems/busy"
)

// Outcome classes of reservations, for the report's answers per second.
const (
	classCreated        = "created"
	classReplayed       = "replayed"
	classReplayMismatch = "replay mismatch"
	classInsufficient   = "insufficient"
	classFenced         = "fenced"
	classBusy           = "busy"
)

// errInvariant is returned (wrapped) when the end-of-run oversell check or
// the replay check fails.
var errInvariant = errors.New("reserve invariant violated")

// Reserve reserves 1..3 units of -skus at -rate for -duration and checks
// through the API that nothing was oversold and every reservation is
// accounted for.
type Reserve struct{ cfg *Config }

// Name is "reserve".
func (*Reserve) Name() string { return "reserve" }

// Usage is reserve's paragraph of -h.
func (*Reserve) Usage() string {
	return `reserve 1..3 units of -skus for -duration with fresh idempotency
keys, replaying -replay-percent of earlier ones, then check through
the API that nothing was oversold and every reservation is
accounted for; exits non-zero if not. -pause-percent turns on the
lost-lock knob so fenced writes show up.`
}

func (*Reserve) register(*flag.FlagSet) {}

func (r *Reserve) check() error {
	if r.cfg.Reserve.PausePercent > 0 {
		if err := r.cfg.needAdmin("reserve with -pause-percent"); err != nil {
			return err
		}
	}
	return r.cfg.bounded()
}

// Inventory is the API's GET /v1/products/{id}/inventory answer.
type Inventory struct {
	ProductID  int64 `json:"product_id"`
	Stock      int   `json:"stock"`
	Reserved   int   `json:"reserved"`
	Available  int   `json:"available"`
	FenceToken int64 `json:"fence_token"`
}

// checkInvariant returns the violations of the no-oversell invariant, one
// message per problem, sorted by product id; none means it holds. For every
// product in before, after or created: both inventories must be known,
// after.Reserved must not exceed after.Stock, and after.Reserved must equal
// before.Reserved plus created[id], the summed quantities of the distinct
// reservations the run created (replays add nothing).
func checkInvariant(before, after map[int64]Inventory, created map[int64]int) []string {
	return checkReserved(before, after, created, true)
}

// checkReserved is checkInvariant, without the oversell check unless
// oversell is true.
func checkReserved(before, after map[int64]Inventory, created map[int64]int, oversell bool) []string {
	var ids []int64
	for _, m := range []map[int64]Inventory{before, after} {
		for id := range m {
			ids = append(ids, id)
		}
	}
	for id := range created {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []string
	for _, id := range ids {
		b, okB := before[id]
		a, okA := after[id]
		if !okB || !okA {
			out = append(out, fmt.Sprintf("product %d: inventory not read before and after the run (before %v, after %v)", id, okB, okA))
			continue
		}
		if oversell && a.Reserved > a.Stock {
			out = append(out, fmt.Sprintf("product %d: oversold: reserved %d > stock %d", id, a.Reserved, a.Stock))
		}
		if want := b.Reserved + created[id]; a.Reserved != want {
			out = append(out, fmt.Sprintf("product %d: reserved %d != %d before + %d created = %d (%+d units unaccounted for)",
				id, a.Reserved, b.Reserved, created[id], want, a.Reserved-want))
		}
	}
	return out
}

// reservation is a request the run sent and the API created, kept so that
// it can be replayed.
type reservation struct {
	key       string
	productID int64
	quantity  int
	id        int64
}

// reserveState collects the results of a reserve run; its methods are safe
// for concurrent use.
type reserveState struct {
	mu        sync.Mutex
	sum       *ReserveSummary
	createdQ  map[int64]int
	createdN  map[int64]int
	createdRs []reservation
	unknown   []reservation // fresh keys whose answer said nothing about the outcome
}

// pickReplay returns a random earlier created reservation, if any.
func (st *reserveState) pickReplay() (reservation, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.createdRs) == 0 {
		return reservation{}, false
	}
	return st.createdRs[rand.IntN(len(st.createdRs))], true
}

// readInventories GETs the inventory of every id.
func readInventories(ctx context.Context, client *loadgen.Client, ids []int64) (map[int64]Inventory, error) {
	out := make(map[int64]Inventory, len(ids))
	for _, id := range ids {
		var inv Inventory
		if err := client.GetJSON(ctx, "inventory", fmt.Sprintf("/v1/products/%d/inventory", id), &inv); err != nil {
			return nil, err
		}
		out[id] = inv
	}
	return out, nil
}

// Reconciliation of unknown outcomes: attempts per reservation and the
// pause between them (a busy lock or a restarting replica clears in a few
// seconds).
const (
	reconcileAttempts = 5
	reconcilePause    = time.Second
	reconcileFor      = time.Minute
)

// reserveCounters are the API counters a reserve run reports the change of.
var reserveCounters = []struct {
	name   string
	labels map[string]string
	label  string
}{
	{"catalog_reservations_total", map[string]string{"result": "reserved"}, "reservations reserved"},
	{"catalog_reservations_total", map[string]string{"result": "duplicate"}, "reservations duplicate (replays)"},
	{"catalog_reservations_total", map[string]string{"result": "insufficient"}, "reservations insufficient"},
	{"catalog_reservations_total", map[string]string{"result": "fenced"}, "reservations fenced"},
	{"catalog_reservations_total", map[string]string{"result": "lock_timeout"}, "reservations lock_timeout"},
	{"lockx_acquire_total", map[string]string{"name": "inventory", "result": "acquired"}, "inventory locks acquired"},
	{"lockx_acquire_total", map[string]string{"name": "inventory", "result": "timeout"}, "inventory lock timeouts"},
	{"lockx_lost_total", map[string]string{"name": "inventory"}, "inventory locks lost"},
}

// Run drives reservations of -skus at -rate for -duration,
// replaying -replay-percent of earlier keys, then checks through the API
// that nothing was oversold and every created reservation is accounted for.
// It writes the report and a table to stdout, and returns an error wrapping
// errInvariant when the check or a replay failed, errErrorRate when the
// error rate passed -max-error-rate.
func (r *Reserve) Run(ctx context.Context, e *Env) error {
	sum, _, err := reserveLoad(ctx, e, r.Name(), true)
	if err != nil {
		return err
	}
	failErr := sum.check(e.cfg.MaxErrorRate, e.cfg.Reserve.MaxBusyRate)
	if err := e.writeReport(ctx, r.Name(), sum); err != nil {
		return err
	}
	sum.WriteTable(e.stdout)
	return failErr
}

// check adds the verdict's other failures to s.Failures and returns them
// all as one error: errInvariant for the invariant's, the replays' and the
// unresolved outcomes'; errNothingTested when no reservation was created or
// busy answers passed maxBusyRate (the invariant was hardly exercised);
// errErrorRate for the error rate's. It sets s.Passed.
func (s *ReserveSummary) check(maxErrorRate, maxBusyRate float64) error {
	if s.Unresolved > 0 {
		s.Failures = append(s.Failures, fmt.Sprintf("%d reservations' outcome still unknown after %d attempts to replay them: the invariant cannot be checked exactly", s.Unresolved, reconcileAttempts))
	}
	var failErr error
	if len(s.Failures) > 0 {
		failErr = fmt.Errorf("%w: %s", errInvariant, strings.Join(s.Failures, "; "))
	}
	fail := func(kind error, msg string) {
		s.Failures = append(s.Failures, msg)
		failErr = errors.Join(failErr, fmt.Errorf("%w: %s", kind, msg))
	}
	if s.Created == 0 {
		fail(errNothingTested, "no reservation was created: the run tested nothing (out of stock, or every request refused)")
	}
	if s.Requests > 0 {
		if r := float64(s.Busy) / float64(s.Requests); r > maxBusyRate {
			fail(errNothingTested, fmt.Sprintf("%.4f of reservations answered 503 busy > -max-busy-rate %.4f", r, maxBusyRate))
		}
	}
	if s.ErrorRate > maxErrorRate {
		fail(errErrorRate, fmt.Sprintf("error rate %.4f > %.4f", s.ErrorRate, maxErrorRate))
	}
	s.Passed = len(s.Failures) == 0
	return failErr
}

// errNothingTested is returned (wrapped) when a reserve run could not
// exercise the invariant.
var errNothingTested = errors.New("reserve run tested too little")

// reserveLoad is one reserve run without its report: the load, the API's
// counters and the inventories before and after, the invariant (with the
// oversell check only if oversell is true) and the replays' check in
// Failures. The state holds the reservations it created. Its slowest
// requests are kept under phase.
func reserveLoad(ctx context.Context, e *Env, phase string, oversell bool) (_ *ReserveSummary, _ *reserveState, err error) {
	cfg, rc := e.cfg, e.cfg.Reserve
	client := e.targets[0] // reads of the invariant: any replica sees the same database

	before, err := readInventories(ctx, client, rc.SKUs)
	if err != nil {
		return nil, nil, err
	}
	if rc.PausePercent > 0 {
		// Reset whatever happens, also when only some replicas took the knob.
		defer func() { err = errors.Join(err, resetFaults(e)) }()
		knobs := map[string]int{"reservation_pause_ms": rc.PauseMS, "reservation_pause_percent": rc.PausePercent}
		if err := e.targets.AdminPut(ctx, "/admin/faults", cfg.AdminToken, knobs); err != nil {
			return nil, nil, err
		}
	}

	sum := &ReserveSummary{
		Load: newLoad("reserve", e), Seconds: cfg.Duration.Seconds(), SKUs: rc.SKUs, ReplayPercent: rc.ReplayPercent,
		PausePercent: rc.PausePercent, PauseMS: rc.PauseMS, Verdict: Verdict{MaxErrorRate: cfg.MaxErrorRate},
		ByCode: map[string]int64{}, Server: map[string]float64{},
	}
	if rc.PausePercent == 0 {
		sum.PauseMS = 0
	}
	st := newReserveState(sum)
	e.stats.SetPhase("reserve")
	tl := loadgen.NewTimeline(e.targets, nil, time.Second)
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	r := &loadgen.Runner{
		Rate:        cfg.Rate,
		Duration:    cfg.Duration,
		MaxRequests: cfg.MaxRequests,
		MaxInFlight: cfg.MaxInFlight,
		Do: func(ctx context.Context, req loadgen.Request) loadgen.Outcome {
			return st.do(ctx, e.targets.Pick(req.Seq), rc, runID, req)
		},
		OnResult: func(res loadgen.Result) {
			e.observe("reserve", res)
			e.slowest.Record(phase, res)
			tl.Record(res)
			st.record(res)
		},
	}
	rs, err := loadgen.RunSampled(ctx, r, tl)
	if err != nil {
		return sum, st, err // the caller may clean up what st holds
	}
	// The answers' counters: the timeline's increase over the run (reset-safe).
	inc := tl.Increase()
	for _, c := range reserveCounters {
		sum.Server[c.label] = inc.Sum(c.name, c.labels)
	}
	// Settle the lost answers without the pause knob, then read the result.
	if rc.PausePercent > 0 {
		if err := resetFaults(e); err != nil {
			return sum, st, err
		}
	}
	st.reconcile(ctx, e.targets)
	after, err := readInventories(ctx, client, rc.SKUs)
	if err != nil {
		return nil, nil, err
	}
	sum.Timeline = tl.Points()
	sum.finish()
	sum.Latency = tl.SegmentLatency("") // the run is the timeline's one segment
	if el := rs.End.Sub(rs.Start); el > 0 {
		sum.RPS = float64(sum.Requests) / el.Seconds()
	}
	if rs.Scheduled > 0 {
		sum.ErrorRate = float64(sum.Errors+sum.Dropped) / float64(rs.Scheduled)
	}

	inv := &sum.Invariant
	inv.Violations = checkReserved(before, after, st.createdQ, oversell)
	inv.Passed = len(inv.Violations) == 0
	for _, id := range rc.SKUs {
		inv.SKUs = append(inv.SKUs, SKUInvariant{
			ProductID: id, Stock: after[id].Stock,
			ReservedBefore: before[id].Reserved, ReservedAfter: after[id].Reserved,
			CreatedQuantity: st.createdQ[id], CreatedReservations: st.createdN[id],
		})
	}
	for _, v := range inv.Violations {
		sum.Failures = append(sum.Failures, "invariant: "+v)
	}
	if sum.ReplayMismatches > 0 {
		sum.Failures = append(sum.Failures, fmt.Sprintf("%d replays did not return the original reservation with 200", sum.ReplayMismatches))
	}
	return sum, st, nil
}

// resetFaults sets every fault knob of every replica back to 0, with a
// fresh context: the run's may be canceled.
func resetFaults(e *Env) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.targets.AdminPut(ctx, "/admin/faults", e.cfg.AdminToken, map[string]int{}); err != nil {
		return fmt.Errorf("reset fault knobs: %w", err)
	}
	return nil
}

// newReserveState returns empty state for a run summarised into sum.
func newReserveState(sum *ReserveSummary) *reserveState {
	return &reserveState{sum: sum, createdQ: map[int64]int{}, createdN: map[int64]int{}}
}

// record counts a Runner result in the summary.
func (st *reserveState) record(res loadgen.Result) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if res.Dropped {
		st.sum.Dropped++
		return
	}
	st.sum.Requests++
	st.sum.ByCode[res.Code]++
}

// do sends one reservation (a replay of an earlier created one with
// probability -replay-percent, otherwise a fresh key) and records its
// result. Busy (503) and refusals (409) are expected answers, not errors.
func (st *reserveState) do(ctx context.Context, client *loadgen.Client, rc Reservations, runID string, req loadgen.Request) loadgen.Outcome {
	res := reservation{
		key:       fmt.Sprintf("loadgen-%s-%d", runID, req.Seq),
		productID: rc.SKUs[rand.IntN(len(rc.SKUs))],
		quantity:  1 + rand.IntN(maxReserveQuantity),
	}
	replay := false
	if rc.ReplayPercent > 0 && rand.Float64()*100 < rc.ReplayPercent {
		if earlier, ok := st.pickReplay(); ok {
			res, replay = earlier, true
		}
	}
	body := map[string]any{"product_id": res.productID, "quantity": res.quantity, "idempotency_key": res.key}
	out, data := client.PostJSON(ctx, reserveEndpoint, "/v1/reservations", body, nil, loadgen.Expect(http.StatusConflict))
	var problem struct {
		Type string `json:"type"`
		ID   int64  `json:"id"`
	}
	_ = json.Unmarshal(data, &problem)
	var se *loadgen.StatusError
	if errors.As(out.Err, &se) {
		problem.Type = se.Type
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.sum
	if replay && out.Code == "409" {
		// A refusal of a known key: the API did not return the reservation.
		s.ReplayMismatches++
		out.Class = classReplayMismatch
		return out
	}
	switch {
	case out.Code == "201":
		// A new reservation: count it even when it answered a replay (a
		// double reservation under one key), so the invariant stays about
		// the database, and flag the replay.
		s.Created++
		st.createdQ[res.productID] += res.quantity
		st.createdN[res.productID]++
		out.Class = classCreated
		if replay {
			s.ReplayMismatches++
			out.Class = classReplayMismatch
		} else {
			res.id = problem.ID
			st.createdRs = append(st.createdRs, res)
		}
	case out.Code == "200" && replay:
		if problem.ID == res.id {
			s.Replays++
			out.Class = classReplayed
		} else {
			s.ReplayMismatches++
			out.Class = classReplayMismatch
		}
	case out.Code == "409" && problem.Type == problemInsufficient:
		s.Insufficient++
		out.Class = classInsufficient
	case out.Code == "409" && problem.Type == problemFenced:
		s.Fenced++
		out.Class = classFenced
	case out.Code == "503" && problem.Type == problemBusy:
		s.Busy++
		out.Err = nil // contention, not a failure
		out.Class = classBusy
	default:
		// A transport error, a timeout, 500 or 503 unavailable: the
		// reservation may or may not have been made. reconcile finds out.
		s.Errors++
		if out.Err == nil {
			out.Err = fmt.Errorf("unexpected answer %s %q", out.Code, problem.Type)
		}
		if !replay {
			s.Unknown++
			st.unknown = append(st.unknown, res)
		}
	}
	return out
}

// reconcile settles every reservation whose answer was lost or said
// nothing by sending it again with its idempotency key: 200 (made the
// first time) or 201 (made now) counts it created, a 409 refusal not made;
// anything else is retried on the next replica, up to reconcileAttempts
// times, then left unresolved. Up to 8 run at once, all within reconcileFor.
func (st *reserveState) reconcile(ctx context.Context, targets loadgen.Targets) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reconcileFor)
	defer cancel()
	st.mu.Lock()
	unknown := st.unknown
	st.unknown = nil
	st.mu.Unlock()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, res := range unknown {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st.settle(ctx, targets, res)
		})
	}
	wg.Wait()
}

// settle is reconcile's work for one reservation.
func (st *reserveState) settle(ctx context.Context, targets loadgen.Targets, res reservation) {
	body := map[string]any{"product_id": res.productID, "quantity": res.quantity, "idempotency_key": res.key}
	for attempt := int64(0); attempt < reconcileAttempts && ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(reconcilePause):
			case <-ctx.Done():
			}
		}
		out, data := targets.Pick(attempt).PostJSON(ctx, "reconcile", "/v1/reservations", body, nil, loadgen.Expect(http.StatusConflict))
		var created struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(data, &created)
		st.mu.Lock()
		switch {
		case (out.Code == "200" || out.Code == "201") && created.ID != 0:
			res.id = created.ID
			st.sum.Created++
			st.sum.ReconciledCreated++
			st.createdQ[res.productID] += res.quantity
			st.createdN[res.productID]++
			st.createdRs = append(st.createdRs, res)
			st.mu.Unlock()
			return
		case out.Code == "409":
			st.sum.ReconciledNotCreated++
			st.mu.Unlock()
			return
		}
		st.mu.Unlock()
	}
	st.mu.Lock()
	st.sum.Unresolved++
	st.mu.Unlock()
}
