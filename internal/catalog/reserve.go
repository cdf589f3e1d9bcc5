package catalog

import (
	"cmp"
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
	// Redis is unavailable. Nothing was reserved; retry later.
	ErrLockBusy = errors.New("catalog: product is busy, retry later")
	// ErrFenced: the lock was lost before the warehouse gave the units,
	// and the warehouse refused them or they were never asked for. Nothing
	// was reserved.
	ErrFenced = errors.New("catalog: lock lost, nothing reserved")
	// ErrOutcomeUnknown: a step failed without saying whether it ran (a
	// reply lost, a connection cut), and looking the request up could not
	// settle it. Retry the same request, with the same idempotency key: the
	// retry answers what happened and finishes what was begun.
	ErrOutcomeUnknown = errors.New("catalog: the outcome could not be confirmed; retry the same request (with the same idempotency key)")
)

// finishTimeout bounds the steps a request finishes on a context of its
// own once the warehouse has moved units (making a hold active, giving
// units back) and the look-ups that settle an unknown outcome.
const finishTimeout = 5 * time.Second

// Reserve holds stock of a product as a saga (docs/api.md#the-saga): it
// records the intent (a pending reservation under the key), takes the
// units from the warehouse under the product's guard, then makes the
// reservation active; created is false for an idempotent replay, which is
// answered without the lock. Every answer is true: a definite refusal
// (insufficient stock, fenced, busy) only when nothing was reserved, and a
// step whose outcome is unknown is settled by looking the key up on a
// context of its own: created when the hold exists, ErrOutcomeUnknown
// when that cannot be learned.
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (Reservation, bool, error) {
	ctx, span := s.startReserve(ctx, req)
	r, created, err := s.reserve(ctx, req)
	result := reserveResult(ctx, created, err)
	if result != "" {
		s.reservations.WithLabelValues(result).Inc()
	}
	endReserve(span, result, err)
	return r, created, err
}

// reserveResult is the catalog_reservations_total label of an answer; ""
// for failures outside the contract's results (bad input, unknown product).
// An unknown outcome is checked first: it is never a definite failure.
func reserveResult(ctx context.Context, created bool, err error) string {
	switch {
	case err == nil && created:
		return "reserved"
	case err == nil:
		return "duplicate"
	case errors.Is(err, ErrOutcomeUnknown):
		return "unknown"
	case errors.Is(err, ErrInsufficientStock):
		return "insufficient"
	case errors.Is(err, ErrFenced):
		return "fenced"
	case errors.Is(err, ErrLockBusy):
		return "lock_timeout"
	case ctx.Err() != nil:
		return "cancelled"
	}
	return ""
}

func (s *Service) reserve(ctx context.Context, req ReserveRequest) (Reservation, bool, error) {
	hold := Hold{ProductID: req.ProductID, Quantity: req.Quantity, IdempotencyKey: req.IdempotencyKey, TTL: s.holdTTL}
	r, created, err := s.store.Intend(ctx, hold)
	switch {
	case err != nil && definite(err):
		return Reservation{}, false, err
	case err != nil:
		return s.lookUpReserve(ctx, req, 0, false, err)
	case !created && r.Status != StatusPending:
		return r, false, nil // a replay
	}
	// The intent holds nothing: whatever stops us before the take leaves
	// it to a retry or to the reconciler.
	g, err := s.guard(ctx, req.ProductID)
	if err != nil {
		return Reservation{}, false, err
	}
	defer g.release()
	// The claim keeps an older attempt of the key, stopped with its take
	// refused, from removing the intent under ours.
	claimed, err := s.store.ClaimIntent(ctx, r.ID, g.fence.Token)
	switch {
	case err != nil:
		return Reservation{}, false, err // nothing taken: the intent waits for a retry or the reconciler
	case !claimed:
		return s.lookUpReserve(ctx, req, g.fence.Token, false, errSuperseded)
	}
	s.hooks.run(s.hooks.beforeTake, g.ctx, req.ProductID)
	if err := s.take(ctx, g, req); err != nil {
		return s.afterTake(ctx, g, req, r, err)
	}
	s.hooks.run(s.hooks.beforeActivate, ctx, req.ProductID)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	r, activated, err := s.store.Activate(fctx, r.ID, g.fence.Token)
	if err != nil {
		return s.lookUpReserve(ctx, req, g.fence.Token, true, err)
	}
	return r, activated, nil // not activated: a request with the same key, or a stocktake, made it active first
}

// take moves the request's units out of the warehouse under g. An injected
// pause stands for a process that stops between its read and its write (a
// GC pause, a frozen VM): it does not see its lock expire, so its write
// goes out on a context the loss does not end.
func (s *Service) take(ctx context.Context, g *guard, req ReserveRequest) error {
	wctx, pause := g.ctx, s.faults.ReservationPause()
	if pause > 0 {
		wctx = context.WithoutCancel(ctx)
	}
	m := Move{Key: TakeKey(req.IdempotencyKey), ProductID: req.ProductID, Units: req.Quantity}
	return s.warehouse.Take(wctx, m, g.fence, func() {
		s.hooks.run(s.hooks.betweenReadAndWrite, wctx, req.ProductID)
		_ = FixedDelay(pause)(wctx)
	})
}

// afterTake answers a take that failed with err. Only a refusal after which
// no take of the key can be applied removes the intent and says why
// (abandonIfUntaken); anything else, or an intent that may not be removed,
// is answered by a look-up.
func (s *Service) afterTake(ctx context.Context, g *guard, req ReserveRequest, r Reservation, err error) (Reservation, bool, error) {
	if !definite(err) {
		return s.lookUpReserve(ctx, req, g.fence.Token, true, err)
	}
	if s.flaws.AbandonUnlooked {
		return s.abandonUnlooked(ctx, g, req, r, err)
	}
	if abandoned, aerr := s.abandonIfUntaken(ctx, g, r, err); aerr != nil || !abandoned {
		return s.lookUpReserve(ctx, req, g.fence.Token, true, cmp.Or(aerr, err))
	}
	return Reservation{}, false, refusal(g, err)
}

// refusal is the answer to a take refused with err once its intent is
// abandoned: insufficient stock as it is (the fence let the read through,
// even if the lock was lost meanwhile), a stale token or a lost lock as
// ErrFenced, anything else (the caller gone) as it is.
func refusal(g *guard, err error) error {
	if !errors.Is(err, ErrInsufficientStock) && (errors.Is(err, pgfence.ErrStaleToken) || g.lost()) {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return err
}

// abandonIfUntaken removes intent r after its attempt's take failed with
// err, when no take of its key is applied or can still land: a refusal for
// stock read the moves under the attempt's fence and found none; any other
// refusal (the fence refused the attempt, or the call was never sent) did
// not look, so the take is looked up first (lookUpTake). It reports
// whether it removed the intent.
func (s *Service) abandonIfUntaken(ctx context.Context, g *guard, r Reservation, err error) (bool, error) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if !errors.Is(err, ErrInsufficientStock) {
		taken, lerr := s.lookUpTake(actx, r, g.fence)
		if lerr != nil || taken {
			return false, lerr
		}
	}
	return s.store.Abandon(actx, r.ID, g.fence.Token)
}

// lookUpTake reports whether the take of intent r was applied, in a way
// that no take of its key by f's token or an older one can land after it
// answers: with a checked fence it is an access by the token, and once
// that is refused as stale, a newer token's access has already shut the
// older ones out, so a plain read is as good.
func (s *Service) lookUpTake(ctx context.Context, r Reservation, f Fence) (bool, error) {
	taken, err := s.warehouse.Applied(ctx, takeMove(r), f)
	if errors.Is(err, pgfence.ErrStaleToken) {
		taken, err = s.warehouse.Applied(ctx, takeMove(r), Fence{})
	}
	return taken, err
}

// errSuperseded: a newer attempt of the key claimed its intent first.
var errSuperseded = errors.New("catalog: a newer attempt with the same idempotency key carries the reservation on")

// definite reports an error after which this attempt wrote nothing.
// Whether an earlier attempt of the same key did is another question
// (abandonIfUntaken).
func definite(err error) bool {
	for _, d := range []error{ErrInsufficientStock, ErrIdempotencyMismatch, ErrInvalidArgument, ErrNotFound, pgfence.ErrStaleToken, errNotSent} {
		if errors.Is(err, d) {
			return true
		}
	}
	return false
}

// lookUpReserve learns what a reservation whose last step failed with
// cause did, on a context of its own (the request's may be what ended): a
// hold under the key is the answer; an intent whose take the warehouse
// applied is made active first (under token). It is answered as created
// when this request recorded or carried on the intent (ours) or made it
// active here, as a replay otherwise. When no hold is found the outcome
// stays unknown: 503 "retry", and the retry or the reconciler finishes it.
func (s *Service) lookUpReserve(ctx context.Context, req ReserveRequest, token int64, ours bool, cause error) (Reservation, bool, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	r, found, err := s.store.Replay(lctx, req.ProductID, req.Quantity, req.IdempotencyKey)
	if err == nil && found && r.Status == StatusPending {
		r, _, err = s.store.Activate(lctx, r.ID, token) // a no-op unless its take is applied
		ours = true
	}
	switch {
	case err == nil && found && r.Status != StatusPending:
		return r, ours, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		cause = fmt.Errorf("%w (look-up: %w)", cause, err)
	}
	return Reservation{}, false, fmt.Errorf("%w: %w", ErrOutcomeUnknown, cause)
}

// takeMove and giveMove are the warehouse moves of reservation r.
func takeMove(r Reservation) Move {
	return Move{Key: TakeKey(r.IdempotencyKey), ProductID: r.ProductID, Units: r.Quantity}
}

func giveMove(r Reservation) Move {
	return Move{Key: GiveKey(r.ID), ProductID: r.ProductID, Units: r.Quantity}
}

// Reservation returns a reservation as it is now, or ErrNotFound.
func (s *Service) Reservation(ctx context.Context, id int64) (Reservation, error) {
	return s.store.Reservation(ctx, id)
}
