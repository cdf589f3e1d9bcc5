package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// DefaultHoldTTL is how long a reservation holds its units unless the
// Service is configured otherwise.
const DefaultHoldTTL = 15 * time.Minute

// Hold is a reservation to record: qty units of a product for the request
// identified by IdempotencyKey, held for TTL.
type Hold struct {
	ProductID      int64
	Quantity       int
	IdempotencyKey string
	// TTL is how long the reservation holds its units; 0 means
	// DefaultHoldTTL.
	TTL time.Duration
}

// check validates a hold's quantity and key.
func (h Hold) check() error {
	switch k := h.IdempotencyKey; {
	case h.Quantity < 1 || h.Quantity > math.MaxInt32:
		return fmt.Errorf("%w: quantity %d", ErrInvalidArgument, h.Quantity)
	case strings.TrimSpace(k) == "":
		return fmt.Errorf("%w: blank idempotency key", ErrInvalidArgument)
	case utf8.RuneCountInString(k) > MaxIdempotencyKeyLen || !utf8.ValidString(k):
		return fmt.Errorf("%w: idempotency key longer than %d characters or not UTF-8", ErrInvalidArgument, MaxIdempotencyKeyLen)
	}
	return nil
}

// Intend records the intent of a hold, the saga's first step: a pending
// reservation under the key, which holds nothing until Activate
// (docs/api.md#the-saga). If the key has a reservation already, it is
// returned as it is with created = false and nothing written
// (ErrIdempotencyMismatch when it is for another product or quantity). An
// unknown product gives ErrNotFound; a quantity below 1, a blank key or one
// over MaxIdempotencyKeyLen, ErrInvalidArgument. It is one statement: after
// an error, looking the key up (Replay) tells whether it ran.
func (s *Store) Intend(ctx context.Context, h Hold) (res Reservation, created bool, err error) {
	if err := h.check(); err != nil {
		return Reservation{}, false, fmt.Errorf("catalog: %s: %w", QueryReserve, err)
	}
	ttl := h.TTL
	if ttl == 0 {
		ttl = DefaultHoldTTL
	}
	err = s.run(ctx, QueryReserve, func() error {
		// A pending row may be removed between the insert and the select
		// (Abandon); the second round then inserts.
		for range 2 {
			res, err = scanReservation(s.db.QueryRow(ctx, holdMoves[moveIntend].sql, h.ProductID, h.Quantity, h.IdempotencyKey, ttl.Milliseconds()))
			if err == nil {
				created = true
				return nil
			}
			if isForeignKeyViolation(err) {
				return fmt.Errorf("product %d: %w", h.ProductID, ErrNotFound)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var found bool
			if res, found, err = reservationByKey(ctx, s.db, h.IdempotencyKey); err != nil || found {
				if err == nil {
					err = replay(res, h.ProductID, h.Quantity)
				}
				return err
			}
		}
		return errors.New("the idempotency key's reservation came and went twice")
	})
	return res, created, err
}

// Activate makes a pending reservation whose take the warehouse applied
// active, written under token (or the newer token that claimed it): it
// counts its units in inventory.reserved in the same transaction
// (moveActivate). A reservation that is not pending, or whose take is not
// applied, is returned as it is with activated = false; one that is gone (a
// stocktake voided it) gives ErrNotFound.
func (s *Store) Activate(ctx context.Context, id, token int64) (res Reservation, activated bool, err error) {
	err = s.run(ctx, QueryActivate, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			res, err = scanReservation(tx.QueryRow(ctx, holdMoves[moveActivate].sql, id, token))
			if errors.Is(err, pgx.ErrNoRows) {
				res, err = reservationByID(ctx, tx, id)
				return err
			}
			if err != nil {
				return err
			}
			activated = true
			_, err = tx.Exec(ctx, sqlAddReserved, res.ProductID, res.Quantity)
			return err
		})
	})
	return res, activated && err == nil, err
}

// ClaimIntent records that the attempt holding token carries intent id on
// to its take (moveClaimIntent): claimed is false when a newer attempt has
// claimed it or it is no longer pending. An older attempt can then no
// longer abandon it.
func (s *Store) ClaimIntent(ctx context.Context, id, token int64) (claimed bool, err error) {
	err = s.run(ctx, QueryClaimIntent, func() error {
		tag, err := s.db.Exec(ctx, holdMoves[moveClaimIntent].sql, id, token)
		claimed = err == nil && tag.RowsAffected() == 1
		return err
	})
	return claimed, err
}

// Abandon removes intent id, so that its key is free again, when its take
// is not applied and no attempt with a token newer than token claimed it
// (moveAbandon); abandoned says whether it did. The caller must also know
// that no take of the key by token or an older one can still land: a
// fenced look-up by token (Service.lookUpTake) tells it.
func (s *Store) Abandon(ctx context.Context, id, token int64) (abandoned bool, err error) {
	err = s.run(ctx, QueryAbandon, func() error {
		tag, err := s.db.Exec(ctx, holdMoves[moveAbandon].sql, id, token)
		abandoned = err == nil && tag.RowsAffected() == 1
		return err
	})
	return abandoned, err
}

// Replay returns the reservation that idempotencyKey already made, found =
// true, or found = false when the key is new. A reservation under the key for
// another product or quantity gives ErrIdempotencyMismatch.
func (s *Store) Replay(ctx context.Context, productID int64, qty int, idempotencyKey string) (res Reservation, found bool, err error) {
	err = s.run(ctx, QueryReplay, func() error {
		var err error
		if res, found, err = reservationByKey(ctx, s.db, idempotencyKey); err == nil && found {
			err = replay(res, productID, qty)
		}
		return err
	})
	return res, found, err
}

// replay checks that an existing reservation answers a request for qty
// units of productID.
func replay(res Reservation, productID int64, qty int) error {
	if res.ProductID != productID || res.Quantity != qty {
		return fmt.Errorf("%w: key %q holds %d of product %d, the request wants %d of product %d",
			ErrIdempotencyMismatch, res.IdempotencyKey, res.Quantity, res.ProductID, qty, productID)
	}
	return nil
}

// CancelReservation ends an active hold as cancelled, in one catalog
// transaction (moveCancel): its units leave inventory.reserved and its give
// becomes due (GiveDue), to be applied by the warehouse afterwards
// (docs/api.md#the-saga). Any other reservation is returned unchanged,
// ended = false; a pending one, like an unknown id, gives ErrNotFound.
func (s *Store) CancelReservation(ctx context.Context, id int64) (r Reservation, ended bool, err error) {
	return s.end(ctx, QueryCancel, moveCancel, id)
}

// ExpireReservation ends an active hold past its expiry as
// CancelReservation does, with status expired (moveExpire). Any other
// reservation is returned unchanged, so of two sweepers the second changes
// nothing.
func (s *Store) ExpireReservation(ctx context.Context, id int64) (r Reservation, ended bool, err error) {
	return s.end(ctx, QueryExpire, moveExpire, id)
}

func (s *Store) end(ctx context.Context, q string, m holdMove, id int64) (res Reservation, ended bool, err error) {
	err = s.run(ctx, q, func() error {
		return s.inTx(ctx, func(tx pgx.Tx) error {
			res, err = scanReservation(tx.QueryRow(ctx, holdMoves[m].sql, id))
			if errors.Is(err, pgx.ErrNoRows) {
				res, err = reservationByID(ctx, tx, id)
				if err == nil && res.Status == StatusPending {
					err = fmt.Errorf("reservation %d: %w", id, ErrNotFound)
				}
				return err
			}
			if err != nil {
				return err
			}
			ended = true
			_, err = tx.Exec(ctx, sqlReturnStock, res.ProductID, res.Quantity)
			return err
		})
	})
	return res, ended && err == nil, err
}

// MarkGiven records that the warehouse applied the give of ended hold id
// (moveMarkGiven): its give is no longer due. It changes nothing while the
// give is not applied.
func (s *Store) MarkGiven(ctx context.Context, id int64) error {
	return s.run(ctx, QueryMarkGiven, func() error {
		_, err := s.db.Exec(ctx, holdMoves[moveMarkGiven].sql, id)
		return err
	})
}

// Reservation returns the reservation with the given id, or ErrNotFound; a
// pending one is not a reservation yet and gives ErrNotFound too.
func (s *Store) Reservation(ctx context.Context, id int64) (Reservation, error) {
	var res Reservation
	err := s.run(ctx, QueryReservation, func() error {
		var err error
		res, err = scanReservation(s.db.QueryRow(ctx, sqlReservation, id))
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && res.Status == StatusPending) {
			return fmt.Errorf("reservation %d: %w", id, ErrNotFound)
		}
		return err
	})
	return res, err
}

// ExpiredReservations returns up to limit active holds past their expiry,
// the oldest first.
func (s *Store) ExpiredReservations(ctx context.Context, limit int) ([]Reservation, error) {
	return s.list(ctx, QuerySweep, sqlExpiredReservations, limit)
}

// GivesDue returns up to limit ended holds whose give is due, the oldest
// first: what the reconciler finishes.
func (s *Store) GivesDue(ctx context.Context, limit int) ([]Reservation, error) {
	return s.list(ctx, QueryReconcile, sqlGivesDue, limit)
}

// StalePending returns up to limit pending reservations older than age,
// the oldest first: intents whose request ended without finishing them.
func (s *Store) StalePending(ctx context.Context, age time.Duration, limit int) ([]Reservation, error) {
	return s.list(ctx, QueryReconcile, sqlStalePending, limit, age.Milliseconds())
}

func (s *Store) list(ctx context.Context, q, sql string, args ...any) ([]Reservation, error) {
	var out []Reservation
	err := s.run(ctx, q, func() error {
		rows, err := s.db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Reservation, error) { return scanReservation(row) })
		return err
	})
	return out, err
}

// inTx runs f in a transaction and commits it (Store.commit).
func (s *Store) inTx(ctx context.Context, f func(pgx.Tx) error) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if err := f(tx); err != nil {
		return err
	}
	return s.commit(ctx, tx)
}

// reservationByID reads reservation id in tx, ErrNotFound if there is none.
func reservationByID(ctx context.Context, tx pgx.Tx, id int64) (Reservation, error) {
	res, err := scanReservation(tx.QueryRow(ctx, sqlReservation, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Reservation{}, fmt.Errorf("reservation %d: %w", id, ErrNotFound)
	}
	return res, err
}

// querier is what reservationByKey needs: a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func reservationByKey(ctx context.Context, q querier, key string) (Reservation, bool, error) {
	res, err := scanReservation(q.QueryRow(ctx, sqlReservationByKey, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return Reservation{}, false, nil
	}
	if err != nil {
		return Reservation{}, false, err
	}
	return res, true, nil
}

// scanReservation scans reservationColumns, then any extra columns into
// extra.
func scanReservation(row pgx.Row, extra ...any) (Reservation, error) {
	var r Reservation
	dest := append([]any{&r.ID, &r.ProductID, &r.Quantity, &r.Status, &r.FenceToken, &r.IdempotencyKey, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt, &r.GiveDue}, extra...)
	err := row.Scan(dest...)
	return r, err
}
