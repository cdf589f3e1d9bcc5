package catalog

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// sweepBatch is how many expired holds one query of a sweep lists.
const sweepBatch = 100

// SweepExpired ends the active reservations past their expiry, 100 at a
// time until none is left (or none of a batch could be ended), each under
// its product's guard as a cancel is, and returns how many it ended.
// Several instances may sweep at once: a hold is ended, and its units given
// back, once (TestTwoSweepersReturnStockOnce), also when a sweep is cut off
// between the warehouse and the catalog and another ends the hold
// (TestInterruptedSweepGivesBackOnce). It goes on past a hold it cannot end
// (a busy lock) and returns the errors joined.
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
			_, ended, err := s.end(ctx, r.ID, s.store.ExpireReservation)
			switch {
			case err != nil:
				errs = append(errs, err)
			case ended: // not found ended by another sweeper
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

// RunSweeper sweeps expired holds at every tick until ctx ends, logging
// failures; cmd/api runs it with a ticker (every 10s by default).
func (s *Service) RunSweeper(ctx context.Context, tick <-chan time.Time, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if n, err := s.SweepExpired(ctx); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "sweeping expired reservations", "ended", n, "err", err)
			}
		}
	}
}
