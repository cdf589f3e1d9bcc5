package catalog

import (
	"cmp"
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
// identified by IdempotencyKey, written under Token, held for TTL.
type Hold struct {
	ProductID      int64
	Quantity       int
	IdempotencyKey string
	Token          int64
	// TTL is how long the reservation holds its units; 0 means
	// DefaultHoldTTL.
	TTL time.Duration
}

// Reserve records a hold in one transaction: the key's reservation, if one
// exists, is returned as it is now with created = false and nothing written
// (ErrIdempotencyMismatch for another product or quantity); otherwise the
// reservation is inserted, take moves the units (if it fails nothing is
// recorded) and inventory.reserved grows. Concurrent calls with one key make
// one reservation. An unknown product gives ErrNotFound; a quantity below 1
// or a blank key or one over MaxIdempotencyKeyLen, ErrInvalidArgument. A
// failed commit leaves the outcome unknown
// (docs/api.md#database-queries-and-what-they-cost).
func (s *Store) Reserve(ctx context.Context, h Hold, take func(context.Context) error) (Reservation, bool, error) {
	productID, qty, idempotencyKey := h.ProductID, h.Quantity, h.IdempotencyKey
	switch {
	case qty < 1 || qty > math.MaxInt32:
		return Reservation{}, false, fmt.Errorf("catalog: %s: %w: quantity %d", QueryReserve, ErrInvalidArgument, qty)
	case strings.TrimSpace(idempotencyKey) == "":
		return Reservation{}, false, fmt.Errorf("catalog: %s: %w: blank idempotency key", QueryReserve, ErrInvalidArgument)
	case utf8.RuneCountInString(idempotencyKey) > MaxIdempotencyKeyLen || !utf8.ValidString(idempotencyKey):
		return Reservation{}, false, fmt.Errorf("catalog: %s: %w: idempotency key longer than %d characters or not UTF-8",
			QueryReserve, ErrInvalidArgument, MaxIdempotencyKeyLen)
	}
	var (
		res     Reservation
		created bool
	)
	err := s.run(ctx, QueryReserve, func() error {
		var err error
		res, created, err = s.reserve(ctx, h, take)
		if isUniqueViolation(err, idempotencyKeyConstraint) {
			// A concurrent request with the same key (for another product,
			// whose inventory lock did not serialise us) committed first.
			created = false
			var found bool
			res, found, err = reservationByKey(ctx, s.db, idempotencyKey)
			switch {
			case err != nil:
				return err
			case !found:
				return errors.New("idempotency key conflict, but no reservation has the key")
			}
			return replay(res, productID, qty)
		}
		return err
	})
	if err != nil {
		return Reservation{}, false, err
	}
	return res, created, nil
}

// Replay returns the reservation that idempotencyKey already made, found =
// true, or found = false when the key is new. A reservation under the key for
// another product or quantity gives ErrIdempotencyMismatch. It takes no lock:
// a finished reservation is answered without its product's lock.
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

func (s *Store) reserve(ctx context.Context, h Hold, take func(context.Context) error) (Reservation, bool, error) {
	productID, qty, key := h.ProductID, h.Quantity, h.IdempotencyKey
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Reservation{}, false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	if res, found, err := reservationByKey(ctx, tx, key); err != nil || found {
		if err == nil {
			err = replay(res, productID, qty)
		}
		return res, false, err
	}
	// A concurrent request with the same key waits on the key's index entry
	// until this transaction ends; Reserve then answers it as a replay.
	res, err := scanReservation(tx.QueryRow(ctx, sqlInsertReservation, productID, qty, h.Token, key, cmp.Or(h.TTL, DefaultHoldTTL).Milliseconds()))
	if isForeignKeyViolation(err) {
		return Reservation{}, false, fmt.Errorf("product %d: %w", productID, ErrNotFound)
	}
	if err != nil {
		return Reservation{}, false, err
	}
	if err := take(ctx); err != nil {
		return Reservation{}, false, err
	}
	if _, err := tx.Exec(ctx, sqlAddReserved, productID, qty); err != nil {
		return Reservation{}, false, err
	}
	if err := s.commit(ctx, tx); err != nil {
		return Reservation{}, false, err
	}
	return res, true, nil
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

// CancelReservation cancels an active reservation in one transaction that
// locks it: give returns its units to the warehouse (if it fails nothing
// changes), then they leave inventory.reserved and the status becomes
// cancelled with fence_token = token. An ended reservation is returned
// unchanged without calling give; an unknown id gives ErrNotFound.
func (s *Store) CancelReservation(ctx context.Context, id int64, token int64, give func(context.Context, Reservation) error) (Reservation, error) {
	r, _, err := s.end(ctx, QueryCancel, id, token, StatusCancelled, give)
	return r, err
}

// ExpireReservation ends an active hold past its expiry as
// CancelReservation does, with status expired; ended says whether this call
// ended it. Any other reservation is returned unchanged without calling
// give, so of two sweepers the second changes nothing
// (docs/api.md#reservations).
func (s *Store) ExpireReservation(ctx context.Context, id int64, token int64, give func(context.Context, Reservation) error) (r Reservation, ended bool, err error) {
	return s.end(ctx, QueryExpire, id, token, StatusExpired, give)
}

func (s *Store) end(ctx context.Context, q string, id, token int64, status string, give func(context.Context, Reservation) error) (Reservation, bool, error) {
	var (
		res   Reservation
		ended bool
	)
	err := s.run(ctx, q, func() error {
		tx, err := s.db.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

		var due bool
		res, err = scanReservation(tx.QueryRow(ctx, "SELECT "+reservationColumns+", expires_at <= now() FROM reservations WHERE id = $1 FOR UPDATE", id), &due)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("reservation %d: %w", id, ErrNotFound)
		case err != nil:
			return err
		case res.Status != StatusActive, status == StatusExpired && !due:
			return nil
		}
		if err := give(ctx, res); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlReturnStock, res.ProductID, res.Quantity); err != nil {
			return err
		}
		if res, err = scanReservation(tx.QueryRow(ctx, sqlEndReservation, id, token, status)); err != nil {
			return err
		}
		ended = true
		return s.commit(ctx, tx)
	})
	if err != nil {
		return Reservation{}, false, err
	}
	return res, ended, nil
}

// Reservation returns the reservation with the given id, or ErrNotFound.
func (s *Store) Reservation(ctx context.Context, id int64) (Reservation, error) {
	var res Reservation
	err := s.run(ctx, QueryReservation, func() error {
		var err error
		res, err = scanReservation(s.db.QueryRow(ctx, sqlReservation, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("reservation %d: %w", id, ErrNotFound)
		}
		return err
	})
	return res, err
}

// ExpiredReservations returns up to limit active holds past their expiry,
// the oldest first.
func (s *Store) ExpiredReservations(ctx context.Context, limit int) ([]Reservation, error) {
	var out []Reservation
	err := s.run(ctx, QuerySweep, func() error {
		rows, err := s.db.Query(ctx, sqlExpiredReservations, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Reservation, error) { return scanReservation(row) })
		return err
	})
	return out, err
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
	dest := append([]any{&r.ID, &r.ProductID, &r.Quantity, &r.Status, &r.FenceToken, &r.IdempotencyKey, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt}, extra...)
	err := row.Scan(dest...)
	return r, err
}
