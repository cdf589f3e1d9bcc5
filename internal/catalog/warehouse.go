package catalog

import (
	"context"
	"errors"
	"fmt"
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

// Warehouse is the system of record for units: per product, how many are
// free. It stands for an external service that can only be read and set to
// an absolute value, so a reservation is a read-modify-write that no
// database transaction of the catalog serialises: only the product's lock
// does, and only its fencing token keeps a holder whose lock was lost from
// writing.
//
// It lives in the warehouse table, reached through a pool of its own: every
// call is its own short transaction, never part of the catalog's, and a
// reservation holding a catalog connection never waits for a catalog
// connection to reach it. Safe for concurrent use.
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

// Read returns how many units of the product are free. A checked fence
// makes the read count as an access by its token: it is refused with an
// error matching pgfence.ErrStaleToken when a newer token has accessed the
// product, and refuses older tokens from then on, so that a holder whose
// lock was lost cannot write a count it read before the next holder's.
// An unknown product gives ErrNotFound.
func (w *Warehouse) Read(ctx context.Context, productID int64, f Fence) (units int, err error) {
	err = w.run(ctx, QueryWarehouseRead, productID, f, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT available FROM warehouse WHERE product_id = $1", productID).Scan(&units)
	})
	return units, err
}

// Write sets the product's free units to units, an absolute value. A
// checked fence refuses the write, as Read does, when a newer token has
// accessed the product.
func (w *Warehouse) Write(ctx context.Context, productID int64, units int, f Fence) error {
	return w.run(ctx, QueryWarehouseWrite, productID, f, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE warehouse SET available = $2, updated_at = now() WHERE product_id = $1", productID, units)
		if err == nil && tag.RowsAffected() == 0 {
			err = pgx.ErrNoRows
		}
		return err
	})
}

// Take takes qty units of a product as a client of an outside warehouse
// must: it reads the free count and writes it less qty, two calls, so only
// the caller's guard keeps another Take from running between them. between,
// if not nil, runs after the read. Fewer than qty free units give
// ErrInsufficientStock, and nothing is written.
func (w *Warehouse) Take(ctx context.Context, productID int64, qty int, f Fence, between func()) error {
	free, err := w.Read(ctx, productID, f)
	if err != nil {
		return err
	}
	if free < qty {
		return fmt.Errorf("product %d, %d wanted, %d free: %w", productID, qty, free, ErrInsufficientStock)
	}
	if between != nil {
		between()
	}
	return w.Write(ctx, productID, free-qty, f)
}

// Give returns qty units of a product: it reads the free count and writes
// it plus qty, guarded by the caller as Take is.
func (w *Warehouse) Give(ctx context.Context, productID int64, qty int, f Fence) error {
	free, err := w.Read(ctx, productID, f)
	if err != nil {
		return err
	}
	return w.Write(ctx, productID, free+qty, f)
}

// run runs f in a transaction of its own, after claiming the product's row
// for a checked fence.
func (w *Warehouse) run(ctx context.Context, q string, productID int64, f Fence, fn func(pgx.Tx) error) error {
	start := time.Now()
	err := pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		if f.Checked {
			if err := pgfence.Claim(ctx, tx, pgfence.Row{Table: "warehouse", KeyColumn: "product_id", TokenColumn: "fence_token", Key: productID}, f.Token); err != nil {
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
