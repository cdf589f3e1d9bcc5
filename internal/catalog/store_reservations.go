package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Reserve records a hold of qty units of a product for the request
// identified by idempotencyKey, in one transaction:
//
//  1. If a reservation with idempotencyKey exists, it is returned as it is
//     now (possibly cancelled) with created = false, and nothing is written;
//     if that reservation is for another product or quantity, the error is
//     ErrIdempotencyMismatch.
//  2. The reservation is inserted (active, fence_token = token); the key's
//     unique index makes a concurrent request with the same key wait here.
//  3. take is called: it takes the units from the warehouse (the caller's
//     read-modify-write) or fails, and then nothing is recorded.
//  4. The units are added to inventory.reserved, and the transaction commits.
//
// Concurrent calls with the same key create one reservation: the others
// return it with created = false. An unknown product gives ErrNotFound; a
// quantity below 1 or a key that is blank or longer than
// MaxIdempotencyKeyLen characters gives ErrInvalidArgument. If the commit
// fails the outcome is unknown: it may have committed (Service.Reserve looks
// the key up).
func (s *Store) Reserve(ctx context.Context, productID int64, qty int, idempotencyKey string, token int64, take func(context.Context) error) (Reservation, bool, error) {
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
		res, created, err = s.reserve(ctx, productID, qty, idempotencyKey, token, take)
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

func (s *Store) reserve(ctx context.Context, productID int64, qty int, key string, token int64, take func(context.Context) error) (Reservation, bool, error) {
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
	res, err := scanReservation(tx.QueryRow(ctx, sqlInsertReservation, productID, qty, token, key))
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

// CancelReservation cancels a reservation in one transaction that locks it
// first: give is called with the active reservation to return its units to
// the warehouse (or fail, and nothing changes), then the units leave
// inventory.reserved and the reservation becomes cancelled with fence_token
// = token. Cancelling a cancelled reservation returns it unchanged without
// calling give. An unknown id gives ErrNotFound.
func (s *Store) CancelReservation(ctx context.Context, id int64, token int64, give func(context.Context, Reservation) error) (Reservation, error) {
	var res Reservation
	err := s.run(ctx, QueryCancel, func() error {
		var err error
		res, err = s.cancel(ctx, id, token, give)
		return err
	})
	if err != nil {
		return Reservation{}, err
	}
	return res, nil
}

func (s *Store) cancel(ctx context.Context, id, token int64, give func(context.Context, Reservation) error) (Reservation, error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Reservation{}, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	res, err := scanReservation(tx.QueryRow(ctx, sqlLockReservation, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Reservation{}, fmt.Errorf("reservation %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Reservation{}, err
	}
	if res.Status == StatusCancelled {
		return res, nil
	}
	if err := give(ctx, res); err != nil {
		return Reservation{}, err
	}
	if _, err := tx.Exec(ctx, sqlReturnStock, res.ProductID, res.Quantity); err != nil {
		return Reservation{}, err
	}
	res, err = scanReservation(tx.QueryRow(ctx, sqlCancelReservation, id, token))
	if err != nil {
		return Reservation{}, err
	}
	if err := s.commit(ctx, tx); err != nil {
		return Reservation{}, err
	}
	return res, nil
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

func scanReservation(row pgx.Row) (Reservation, error) {
	var r Reservation
	err := row.Scan(&r.ID, &r.ProductID, &r.Quantity, &r.Status, &r.FenceToken, &r.IdempotencyKey, &r.CreatedAt, &r.UpdatedAt)
	return r, err
}

// ReservationProduct returns the product a reservation holds stock of, so
// the caller can take that product's lock before cancelling. It is observed
// as part of the cancel query; ErrNotFound for an unknown reservation.
func (s *Store) ReservationProduct(ctx context.Context, id int64) (int64, error) {
	var productID int64
	err := s.run(ctx, QueryCancel, func() error {
		err := s.db.QueryRow(ctx, "SELECT product_id FROM reservations WHERE id = $1", id).Scan(&productID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		return err
	})
	return productID, err
}
