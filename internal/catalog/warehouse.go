package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
)

// Warehouse query names, observed like the Store's (QueryNames).
const (
	QueryWarehouseRead  = "warehouse_read"
	QueryWarehouseWrite = "warehouse_write"
)

// Warehouse is the system of record for free units per product: an outside
// service that can only be read and set to an absolute value, so only the
// product's lock and its fencing token guard a reservation's
// read-modify-write. Its table is reached through a pool of its own, each
// call its own transaction (docs/api.md#reservations). Safe for concurrent
// use.
type Warehouse struct {
	db      *pgxpool.Pool
	observe Observer
}

// NewWarehouse returns the warehouse on db; observe, if not nil, receives
// each call's duration as QueryWarehouseRead or QueryWarehouseWrite.
func NewWarehouse(db *pgxpool.Pool, observe Observer) *Warehouse {
	return &Warehouse{db: db, observe: observe}
}

// Fence says whether a warehouse call carries a fencing token, and which.
// Without one (the zero Fence) the warehouse checks nothing.
type Fence struct {
	Token   int64
	Checked bool
}

// Move is units moving between the warehouse and a reservation. Key names
// the move: the warehouse applies each key once, so a retried move is not
// applied twice.
type Move struct {
	Key       string
	ProductID int64
	Units     int
}

// TakeKey and GiveKey are the move keys of a reservation's take (by its
// idempotency key, so that a retried request finds its take) and of its
// give (by its id).
func TakeKey(idempotencyKey string) string { return "take:" + idempotencyKey }

// GiveKey is the move key of the give that ends reservation id.
func GiveKey(id int64) string { return "give:" + strconv.FormatInt(id, 10) }

// Take takes m.Units of m.ProductID in two calls, read the free count then
// write it less the units (between, if not nil, runs after the read), so
// only the caller's guard serialises Takes. An applied move (its Key seen)
// returns nil and writes nothing (ErrIdempotencyMismatch if it had other
// units or product); too few free units give ErrInsufficientStock, an
// unknown product ErrNotFound. With a checked fence each call is an access
// by its token, refused (pgfence.ErrStaleToken) once a newer token accessed
// the product.
func (w *Warehouse) Take(ctx context.Context, m Move, f Fence, between func()) error {
	free, applied, err := w.read(ctx, m, f)
	if err != nil || applied {
		return err
	}
	if free < m.Units {
		return fmt.Errorf("product %d, %d wanted, %d free: %w", m.ProductID, m.Units, free, ErrInsufficientStock)
	}
	if between != nil {
		between()
	}
	return w.write(ctx, m, free-m.Units, f)
}

// Give returns m.Units units of m.ProductID: it reads the free count and
// writes it plus the units, guarded by the caller, fenced and applied once
// as Take is.
func (w *Warehouse) Give(ctx context.Context, m Move, f Fence) error {
	free, applied, err := w.read(ctx, m, f)
	if err != nil || applied {
		return err
	}
	return w.write(ctx, m, free+m.Units, f)
}

// Applied reports whether move m was applied. With a checked fence it is
// an access by the token, like Take's read: once it returned, an access by
// an older token is refused, so a take it did not find can no longer land
// by an older holder (what lets the reconciler abandon an intent).
func (w *Warehouse) Applied(ctx context.Context, m Move, f Fence) (bool, error) {
	_, applied, err := w.read(ctx, m, f)
	return applied, err
}

// errNotSent marks a warehouse call that was not sent because its context
// had ended: nothing of it can have been applied.
var errNotSent = errors.New("catalog: the warehouse call was not sent")

// read returns the free units of the move's product and whether the move
// was applied already; a move applied with other units or to another
// product gives ErrIdempotencyMismatch.
func (w *Warehouse) read(ctx context.Context, m Move, f Fence) (free int, applied bool, err error) {
	var (
		product *int64
		units   *int
	)
	err = w.run(ctx, QueryWarehouseRead, m.ProductID, f, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT w.available, m.product_id, m.units
			FROM warehouse w LEFT JOIN warehouse_moves m ON m.move_key = $2 WHERE w.product_id = $1`,
			m.ProductID, m.Key).Scan(&free, &product, &units)
	})
	switch {
	case err != nil || product == nil:
		return free, false, err
	case *product != m.ProductID || *units != m.Units:
		return 0, false, fmt.Errorf("%w: the warehouse moved %d of product %d under %q, the request moves %d of product %d",
			ErrIdempotencyMismatch, *units, *product, m.Key, m.Units, m.ProductID)
	}
	return free, true, nil
}

// write sets the free units of the move's product to units, an absolute
// value, and records the move, in one transaction; a move recorded
// meanwhile leaves the count as it is.
func (w *Warehouse) write(ctx context.Context, m Move, units int, f Fence) error {
	return w.run(ctx, QueryWarehouseWrite, m.ProductID, f, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO warehouse_moves (move_key, product_id, units) VALUES ($1, $2, $3)
			ON CONFLICT (move_key) DO NOTHING`, m.Key, m.ProductID, m.Units)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		tag, err = tx.Exec(ctx, "UPDATE warehouse SET available = $2, updated_at = now() WHERE product_id = $1", m.ProductID, units)
		if err == nil && tag.RowsAffected() == 0 {
			err = pgx.ErrNoRows
		}
		return err
	})
}

// warehouseRow is a product's fenced row in the warehouse.
func warehouseRow(productID int64) pgfence.Row {
	return pgfence.Row{Table: "warehouse", KeyColumn: "product_id", TokenColumn: "fence_token", Key: productID}
}

// run runs f in a transaction of its own, after claiming the product's row
// for a checked fence.
func (w *Warehouse) run(ctx context.Context, q string, productID int64, f Fence, fn func(pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("catalog: %s: %w: %w", q, errNotSent, context.Cause(ctx))
	}
	start := time.Now()
	err := pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		if f.Checked {
			if err := pgfence.Claim(ctx, tx, warehouseRow(productID), f.Token); err != nil {
				return err
			}
		}
		return fn(tx)
	})
	if w.observe != nil {
		w.observe(q, time.Since(start))
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows), errors.Is(err, pgfence.ErrNoRow):
		return fmt.Errorf("catalog: %s: product %d: %w", q, productID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("catalog: %s: %w", q, err)
	}
	return nil
}
