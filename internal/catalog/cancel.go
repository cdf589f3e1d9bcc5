package catalog

import (
	"context"
	"fmt"
)

// Cancel cancels a reservation (docs/api.md#the-saga): the catalog ends
// the hold first, in one transaction that is final for the buyer as soon
// as it commits; then the warehouse takes the units back under the
// product's guard, or, if that fails, the reconciler does. Cancelling an
// ended reservation returns it unchanged (and gives its units back if that
// is still due). An unknown id, or an intent that holds nothing yet, gives
// ErrNotFound. An end whose commit outcome is unknown is looked up before
// answering: ErrOutcomeUnknown only when the look-up fails.
func (s *Service) Cancel(ctx context.Context, id int64) (Reservation, error) {
	r, _, err := s.endHold(ctx, id, s.store.CancelReservation)
	return r, err
}

// endFunc ends a hold in the catalog: Store.CancelReservation or
// Store.ExpireReservation.
type endFunc func(ctx context.Context, id int64) (Reservation, bool, error)

// endHold ends hold id with end, then gives its units back if that is due;
// ended is end's.
func (s *Service) endHold(ctx context.Context, id int64, end endFunc) (r Reservation, ended bool, err error) {
	if s.flaws.GiveFirst {
		return s.endGiveFirst(ctx, id, end)
	}
	r, ended, err = end(ctx, id)
	if err != nil && !definite(err) {
		ended = false
		r, err = s.lookUpEnd(ctx, id, err)
	}
	if err == nil && r.GiveDue {
		s.give(ctx, r)
	}
	return r, ended, err
}

// lookUpEnd learns what an end whose commit failed with cause did, on a
// context of its own: the reservation if it ended, ErrOutcomeUnknown if it
// is still active or cannot be read.
func (s *Service) lookUpEnd(ctx context.Context, id int64, cause error) (Reservation, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	r, err := s.store.Reservation(lctx, id)
	switch {
	case err != nil:
		cause = fmt.Errorf("%w (look-up: %w)", cause, err)
	case r.Status != StatusActive:
		return r, nil
	}
	return Reservation{}, fmt.Errorf("%w: %w", ErrOutcomeUnknown, cause)
}

// give has the warehouse take back the units of ended hold r under its
// product's guard, then records it, on a context of its own: a buyer who
// leaves does not leave the units out. What fails is left to the
// reconciler, which gives by the same key.
func (s *Service) give(ctx context.Context, r Reservation) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := s.giveUnder(gctx, r); err != nil {
		s.log.InfoContext(ctx, "giving back a reservation's units, left to the reconciler", "reservation", r.ID, "err", err)
	}
}

// giveUnder is give's work: the guard, the warehouse's give (applied once
// by its key), the record that it was applied.
func (s *Service) giveUnder(ctx context.Context, r Reservation) error {
	g, err := s.guard(ctx, r.ProductID)
	if err != nil {
		return err
	}
	defer g.release()
	if err := s.warehouse.Give(g.ctx, giveMove(r), g.fence); err != nil {
		return err
	}
	return s.store.MarkGiven(ctx, r.ID)
}
