package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/stampede-lab/stampede/internal/lockx"
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
)

// Reserve holds stock under the product's lock: in one transaction it
// checks the idempotency key, claims the inventory row with the lock's
// fencing token, checks the stock, inserts the reservation and raises
// reserved. created is false for an idempotent replay.
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (r Reservation, created bool, err error) {
	result := "reserved" // "" for failures outside the contract's results (not found, bad key, database)
	defer func() {
		if result != "" {
			s.reservations.WithLabelValues(result).Inc()
		}
	}()

	// A replay of a finished reservation is answered without the lock.
	if r, found, err := s.store.Replay(ctx, req.ProductID, req.Quantity, req.IdempotencyKey); err != nil || found {
		if err == nil {
			result = "duplicate"
		} else {
			result = ""
		}
		return r, false, err
	}
	// An unknown product is answered before locking: a lock (and its fence
	// counter) per made-up id would let anyone fill the lock servers. The
	// product cache answers this read, negative answers included.
	if _, err := s.Product(ctx, req.ProductID); err != nil {
		result = ""
		return r, false, err
	}
	lk, err := s.locker.Acquire(ctx, strconv.FormatInt(req.ProductID, 10))
	if err != nil {
		result = "lock_timeout"
		if ctx.Err() != nil { // the client went away (or its deadline passed) while waiting
			result = "cancelled"
			return r, false, ctx.Err()
		}
		return r, false, fmt.Errorf("%w: %w", ErrLockBusy, err)
	}
	defer lk.Release()

	// The write runs under the lock's context: if the lock is lost, the
	// transaction is cancelled. An injected pause simulates a process that
	// stops after that check (a GC pause, a frozen VM): its write goes out
	// after the lock has expired, and only the fence stops it.
	wctx := lk.Context()
	if pause := s.faults.ReservationPause(); pause > 0 {
		wctx = context.WithoutCancel(ctx)
		_ = FixedDelay(pause)(ctx)
	}
	r, created, err = s.store.Reserve(wctx, req.ProductID, req.Quantity, req.IdempotencyKey, lk.Token())
	switch {
	case err == nil && !created:
		result = "duplicate"
	case err == nil:
	case errors.Is(err, ErrInsufficientStock):
		// Refused for stock: the fence let the write through (no newer
		// holder had written), even if the lock was lost meanwhile.
		result = "insufficient"
	case errors.Is(err, pgfence.ErrStaleToken), errors.Is(context.Cause(lk.Context()), lockx.ErrLost):
		result = "fenced"
		err = fmt.Errorf("%w: %w", ErrFenced, err)
	default:
		result = ""
	}
	return r, created, err
}

// Cancel cancels a reservation and returns its stock, under the product's
// lock and fenced like Reserve. Cancelling twice returns the cancelled
// reservation.
func (s *Service) Cancel(ctx context.Context, id int64) (Reservation, error) {
	productID, err := s.store.ReservationProduct(ctx, id)
	if err != nil {
		return Reservation{}, err
	}
	lk, err := s.locker.Acquire(ctx, strconv.FormatInt(productID, 10))
	if err != nil {
		if ctx.Err() != nil {
			return Reservation{}, ctx.Err()
		}
		return Reservation{}, fmt.Errorf("%w: %w", ErrLockBusy, err)
	}
	defer lk.Release()
	r, err := s.store.CancelReservation(lk.Context(), id, lk.Token())
	if errors.Is(err, pgfence.ErrStaleToken) {
		err = fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return r, err
}
