package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
)

// ReserveRequest asks to hold quantity units of a product. The idempotency
// key makes a retried request return the first reservation.
type ReserveRequest struct {
	ProductID      int64  `json:"product_id"`
	Quantity       int    `json:"quantity"`
	IdempotencyKey string `json:"idempotency_key"`
}

// Errors of reservations, besides ErrNotFound and ErrInsufficientStock.
var (
	// ErrLockBusy: the product's lock could not be taken in time, or its
	// Redis is unavailable. Retry later.
	ErrLockBusy = errors.New("catalog: product is busy, retry later")
	// ErrFenced: the lock was lost before the write committed (a pause
	// longer than its TTL), and the write was refused. Nothing changed.
	ErrFenced = errors.New("catalog: lock lost, write refused")
	// ErrOutcomeUnknown: the reservation's commit failed without saying
	// whether it ran, and looking its idempotency key up failed too. Retry
	// with the same key: the retry answers what happened.
	ErrOutcomeUnknown = errors.New("catalog: the outcome is unknown; retry with the same idempotency key")
)

// lookupTimeout bounds the look-up of an idempotency key after a commit
// whose outcome is unknown.
const lookupTimeout = 2 * time.Second

// Reserve holds stock of a product: it takes the units from the warehouse
// and records the reservation, guarded as the instance's Mode says; created
// is false for an idempotent replay. A finished replay and an unknown
// product are answered without the lock. A commit that fails without saying
// whether it ran is settled by looking the key up: created, the error
// (ErrFenced if the lock was lost) or ErrOutcomeUnknown
// (docs/api.md#reservations, Truthful outcomes).
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (r Reservation, created bool, err error) {
	result := "reserved" // "" for failures outside the contract's results (not found, bad key, database)
	ctx, span := s.startReserve(ctx, req)
	defer func() {
		if result != "" {
			s.reservations.WithLabelValues(result).Inc()
		}
		endReserve(span, result, err)
	}()

	if r, found, err := s.store.Replay(ctx, req.ProductID, req.Quantity, req.IdempotencyKey); err != nil || found {
		if err == nil {
			result = "duplicate"
		} else {
			result = ""
		}
		return r, false, err
	}
	// A lock (and its fence counter) per made-up id would let anyone fill
	// the lock servers. The product cache answers, negative answers included.
	if _, err := s.Product(ctx, req.ProductID); err != nil {
		result = ""
		return r, false, err
	}
	g, err := s.guard(ctx, req.ProductID)
	if err != nil {
		result = "lock_timeout"
		if ctx.Err() != nil { // the client went away (or its deadline passed) while waiting
			result = "cancelled"
		}
		return r, false, err
	}
	defer g.release()

	// An injected pause stands for a process that stops between its read
	// and its write (a GC pause, a frozen VM): it does not see its lock
	// expire, so its write goes out on a context the loss does not end.
	wctx, pause := g.ctx, s.faults.ReservationPause()
	if pause > 0 {
		wctx = context.WithoutCancel(ctx)
	}
	take := func(wctx context.Context) error {
		m := Move{Key: TakeKey(req.IdempotencyKey), ProductID: req.ProductID, Units: req.Quantity}
		return s.warehouse.Take(wctx, m, g.fence, func() {
			if s.betweenReadAndWrite != nil {
				s.betweenReadAndWrite(req.ProductID)
			}
			_ = FixedDelay(pause)(wctx)
		})
	}
	hold := Hold{ProductID: req.ProductID, Quantity: req.Quantity, IdempotencyKey: req.IdempotencyKey, Token: g.fence.Token, TTL: s.holdTTL}
	r, created, err = s.store.Reserve(wctx, hold, take)
	if err != nil && !definite(err) {
		r, created, err = s.afterUnknownCommit(ctx, req, err)
	}
	switch {
	case err == nil && !created:
		result = "duplicate"
	case err == nil:
	case errors.Is(err, ErrInsufficientStock):
		// Refused for stock: the fence let the read through (no newer
		// holder had come), even if the lock was lost meanwhile.
		result = "insufficient"
	case errors.Is(err, pgfence.ErrStaleToken), g.lost():
		result = "fenced"
		err = fmt.Errorf("%w: %w", ErrFenced, err)
	case errors.Is(err, ErrOutcomeUnknown):
		result = "unknown"
	case ctx.Err() != nil:
		result = "cancelled"
	default:
		result = ""
	}
	return r, created, err
}

// definite reports a reservation error after which nothing was committed.
func definite(err error) bool {
	for _, d := range []error{ErrInsufficientStock, ErrIdempotencyMismatch, ErrInvalidArgument, ErrNotFound, pgfence.ErrStaleToken} {
		if errors.Is(err, d) {
			return true
		}
	}
	return false
}

// afterUnknownCommit looks the request's key up after err left the outcome
// unknown, with a context of its own: the request's may be what ended.
func (s *Service) afterUnknownCommit(ctx context.Context, req ReserveRequest, err error) (Reservation, bool, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	r, found, lerr := s.store.Replay(lctx, req.ProductID, req.Quantity, req.IdempotencyKey)
	switch {
	case lerr != nil:
		return Reservation{}, false, fmt.Errorf("%w: %w (look-up: %w)", ErrOutcomeUnknown, err, lerr)
	case found:
		return r, true, nil
	}
	return Reservation{}, false, err
}

// Reservation returns a reservation as it is now, or ErrNotFound.
func (s *Service) Reservation(ctx context.Context, id int64) (Reservation, error) {
	return s.store.Reservation(ctx, id)
}

// Cancel cancels a reservation and returns its units to the warehouse,
// guarded like Reserve. Cancelling a reservation that has ended (cancelled
// or expired) returns it unchanged.
func (s *Service) Cancel(ctx context.Context, id int64) (Reservation, error) {
	r, _, err := s.end(ctx, id, func(ctx context.Context, id, token int64, give func(context.Context, Reservation) error) (Reservation, bool, error) {
		r, err := s.store.CancelReservation(ctx, id, token, give)
		return r, err == nil, err
	})
	return r, err
}

// end ends reservation id with the store's cancel or expire, under the
// guard of its product, giving its units back to the warehouse; ended is
// the store's.
func (s *Service) end(ctx context.Context, id int64, end func(context.Context, int64, int64, func(context.Context, Reservation) error) (Reservation, bool, error)) (r Reservation, ended bool, err error) {
	if r, err = s.store.Reservation(ctx, id); err != nil || r.Status != StatusActive {
		return r, false, err
	}
	g, err := s.guard(ctx, r.ProductID)
	if err != nil {
		return Reservation{}, false, err
	}
	defer g.release()
	give := func(ctx context.Context, res Reservation) error {
		return s.warehouse.Give(ctx, Move{Key: GiveKey(res.ID), ProductID: res.ProductID, Units: res.Quantity}, g.fence)
	}
	r, ended, err = end(g.ctx, id, g.fence.Token, give)
	if errors.Is(err, pgfence.ErrStaleToken) || (err != nil && g.lost()) {
		err = fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return r, ended, err
}
