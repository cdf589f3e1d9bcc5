package catalog

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// sweepBatch is how many holds one query of a sweep or a reconciliation
// lists.
const sweepBatch = 100

// DefaultPendingAge is how old an intent must be before the reconciler
// settles it: well past a request's time on the server (10s), so that it
// does not race requests still under way (a paused one is fenced anyway).
const DefaultPendingAge = 30 * time.Second

// SweepExpired ends the active reservations past their expiry, 100 at a
// time until none is left (or none of a batch could be ended), as a cancel
// does: the catalog ends each hold, then the warehouse takes its units
// back under the product's guard. Several instances may sweep at once: a
// hold is ended, and its units given back, once
// (TestTwoSweepersReturnStockOnce), also when a sweep is cut off between
// the two (TestEveryCutLeavesNoUnitSoldTwice). It returns how many holds it
// ended and the errors joined.
func (s *Service) SweepExpired(ctx context.Context) (int, error) {
	var errs []error
	n := 0
	for ctx.Err() == nil {
		due, err := s.store.ExpiredReservations(ctx, sweepBatch)
		if err != nil {
			return n, errors.Join(append(errs, err)...)
		}
		batch := 0
		for _, r := range due {
			_, ended, err := s.endHold(ctx, r.ID, s.store.ExpireReservation)
			switch {
			case err != nil:
				errs = append(errs, err)
			case ended: // not when another sweeper ended it
				batch++
				s.expired.Inc()
			}
		}
		n += batch
		if len(due) < sweepBatch || batch == 0 {
			break
		}
	}
	return n, errors.Join(errs...)
}

// Reconcile finishes what cuts left (docs/api.md#the-saga), each under its
// product's guard: it applies the gives still due of ended holds, and
// settles the intents older than the pending age, made active when the
// warehouse applied their take and removed when it did not (the guard's
// fence keeps a late take from landing after that decision). Every
// instance runs it after each sweep; by the moves' keys it is idempotent.
// It returns how many it finished and the errors joined.
func (s *Service) Reconcile(ctx context.Context) (int, error) {
	var errs []error
	due, err := s.store.GivesDue(ctx, sweepBatch)
	errs = append(errs, err)
	n := 0
	for _, r := range due {
		if err := s.giveUnder(ctx, r); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		s.reconciled.WithLabelValues("give").Inc()
	}
	pending, err := s.store.StalePending(ctx, s.pendingAge, sweepBatch)
	errs = append(errs, err)
	for _, r := range pending {
		action, err := s.decideStale(ctx, r)
		if err != nil || action == "" {
			errs = append(errs, err)
			continue
		}
		n++
		s.reconciled.WithLabelValues(action).Inc()
	}
	return n, errors.Join(errs...)
}

// decideStale decides stale intent r under its product's guard: "activate"
// when the warehouse applied its take, "abandon" when it did not (the fenced
// look-up shuts out any older holder's take), "" when a newer attempt of its
// key claimed it meanwhile.
func (s *Service) decideStale(ctx context.Context, r Reservation) (string, error) {
	g, err := s.guard(ctx, r.ProductID)
	if err != nil {
		return "", err
	}
	defer g.release()
	taken, err := s.lookUpTake(g.ctx, r, g.fence)
	switch {
	case err != nil:
		return "", err
	case taken:
		_, _, err = s.store.Activate(ctx, r.ID, g.fence.Token)
		return "activate", err
	}
	abandoned, err := s.store.Abandon(ctx, r.ID, g.fence.Token)
	if !abandoned {
		return "", err // a newer attempt of its key claimed it
	}
	return "abandon", nil
}

// RunSweeper sweeps expired holds and reconciles at every tick until ctx
// ends, logging failures; cmd/api runs it with a ticker (every 10s by
// default).
func (s *Service) RunSweeper(ctx context.Context, tick <-chan time.Time, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if n, err := s.SweepExpired(ctx); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "sweeping expired reservations", "ended", n, "err", err)
			}
			if n, err := s.Reconcile(ctx); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "reconciling reservations", "finished", n, "err", err)
			}
		}
	}
}
