package catalog

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// sweepBatch is how many expired holds one sweep ends at most.
const sweepBatch = 100

// SweepExpired ends up to 100 active reservations past their expiry, each
// under its product's guard as a cancel is, and returns how many it ended.
// Several instances may sweep at once: a hold is ended, and its units given
// back, once (TestTwoSweepersReturnStockOnce). It goes on past a hold it
// cannot end (a busy lock) and returns the errors joined.
func (s *Service) SweepExpired(ctx context.Context) (int, error) {
	due, err := s.store.ExpiredReservations(ctx, sweepBatch)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, r := range due {
		_, ended, err := s.end(ctx, r.ID, s.store.ExpireReservation)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ended: // not found ended by another sweeper
			n++
			s.expired.Inc()
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
