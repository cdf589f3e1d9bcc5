package seed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LockKey is the key of the transaction-scoped advisory lock
// (pg_advisory_xact_lock) that Run holds while it checks and loads, so
// concurrent seeders of one database run one after the other. It is "seedcat"
// in ASCII.
const LockKey int64 = 0x73656564636174

// ErrScaleMismatch is returned (wrapped) by Run when the database was already
// seeded at a different scale. Run never reseeds: drop and recreate the
// database (or its tables) to change the scale.
var ErrScaleMismatch = errors.New("seed: database already seeded at a different scale")

// ErrNotEmpty is returned (wrapped) by Run when the catalog tables hold rows
// but no seed was recorded, for example rows written by hand or by the API.
// Run loads only into empty tables.
var ErrNotEmpty = errors.New("seed: catalog tables are not empty")

// DB is what Run and Checksum need from Postgres: both *pgx.Conn and
// *pgxpool.Pool satisfy it.
type DB interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Result says what one Run call did.
type Result struct {
	// Skipped is true when the database was already seeded at the requested
	// scale and Run changed nothing.
	Skipped bool
	// Scale is the scale of the data in the database.
	Scale float64
	// Counts are the rows of the seed in the database (written by this call,
	// or recorded by the earlier one when Skipped).
	Counts
	// Duration is the wall time of the call.
	Duration time.Duration
}

// Run fills the catalog tables of a migrated, empty database with the
// deterministic catalog for cfg, records it in seed_info and refreshes the
// planner statistics, in one transaction: everything or nothing. It is
// idempotent and safe to call concurrently (package doc): a seed recorded at
// cfg.Scale is skipped (Result.Skipped); errors wrap ErrScaleMismatch (another
// scale recorded), ErrNotEmpty (unrecorded rows) or ErrInvalidScale. Rows
// stream to COPY (about four bytes of memory per review); identity
// sequences then continue after the largest id.
func Run(ctx context.Context, db DB, cfg Config) (Result, error) {
	start := time.Now()
	counts, err := cfg.Counts()
	if err != nil {
		return Result{}, err
	}
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return Result{}, fmt.Errorf("seed: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	// Under READ COMMITTED every statement takes a new snapshot, so the
	// checks below see whatever the previous lock holder committed.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", LockKey); err != nil {
		return Result{}, fmt.Errorf("seed: take advisory lock: %w", err)
	}
	prev, seeded, err := recordedSeed(ctx, tx)
	if err != nil {
		return Result{}, err
	}
	if seeded {
		if prev.Scale != cfg.Scale {
			return Result{}, fmt.Errorf("%w: recorded scale %v, requested %v", ErrScaleMismatch, prev.Scale, cfg.Scale)
		}
		prev.Skipped = true
		prev.Duration = time.Since(start)
		return prev, nil
	}
	var nonEmpty bool
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM categories) OR EXISTS (SELECT FROM products)
		OR EXISTS (SELECT FROM inventory) OR EXISTS (SELECT FROM reviews)`).Scan(&nonEmpty)
	if err != nil {
		return Result{}, fmt.Errorf("seed: check tables: %w", err)
	}
	if nonEmpty {
		return Result{}, fmt.Errorf("%w: found rows but no seed_info record", ErrNotEmpty)
	}

	if err := load(ctx, tx, newGenerator(counts)); err != nil {
		return Result{}, err
	}
	_, err = tx.Exec(ctx, "INSERT INTO seed_info (scale, categories, products, reviews) VALUES ($1, $2, $3, $4)",
		cfg.Scale, counts.Categories, counts.Products, counts.Reviews)
	if err != nil {
		return Result{}, fmt.Errorf("seed: record seed_info: %w", err)
	}
	// ANALYZE may run in a transaction and counts the rows this transaction
	// inserted, so the statistics commit together with the data.
	if _, err := tx.Exec(ctx, "ANALYZE categories, products, inventory, reviews"); err != nil {
		return Result{}, fmt.Errorf("seed: analyze: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Result{}, fmt.Errorf("seed: commit: %w", err)
	}
	return Result{Scale: cfg.Scale, Counts: counts, Duration: time.Since(start)}, nil
}

// recordedSeed reads the seed_info row, if any.
func recordedSeed(ctx context.Context, tx pgx.Tx) (Result, bool, error) {
	var r Result
	err := tx.QueryRow(ctx, "SELECT scale, categories, products, reviews FROM seed_info").
		Scan(&r.Scale, &r.Categories, &r.Products, &r.Reviews)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Result{}, false, nil
	case err != nil:
		return Result{}, false, fmt.Errorf("seed: read seed_info: %w", err)
	}
	return r, true, nil
}

// load copies all generated rows in foreign-key order and moves the identity
// sequences past the explicit ids.
func load(ctx context.Context, tx pgx.Tx, g *generator) error {
	c := g.counts
	plan := g.reviewPlan()
	tables := []struct {
		name    string
		columns []string
		rows    int
		row     func(i int64) []any // i is 1-based
	}{
		{
			"categories", []string{"id", "slug", "name", "created_at"}, c.Categories,
			func(i int64) []any {
				r := g.category(i)
				return []any{r.ID, r.Slug, r.Name, r.CreatedAt}
			},
		},
		{
			"products", []string{"id", "category_id", "sku", "name", "description", "price_cents", "attributes", "created_at", "updated_at"}, c.Products,
			func(i int64) []any {
				r := g.product(i)
				return []any{r.ID, r.CategoryID, r.SKU, r.Name, r.Description, r.PriceCents, r.Attributes, r.CreatedAt, r.UpdatedAt}
			},
		},
		{
			"inventory", []string{"product_id", "stock", "reserved", "updated_at"}, c.Products,
			func(i int64) []any {
				r := g.inventory(i)
				return []any{r.ProductID, r.Stock, r.Reserved, r.UpdatedAt}
			},
		},
		{
			"reviews", []string{"id", "product_id", "rating", "title", "body", "created_at"}, c.Reviews,
			func(i int64) []any {
				r := g.review(i, int64(plan[i-1]))
				return []any{r.ID, r.ProductID, r.Rating, r.Title, r.Body, r.CreatedAt}
			},
		},
	}

	for _, t := range tables {
		var i int64
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if i == int64(t.rows) {
				return nil, nil
			}
			i++
			return t.row(i), nil
		})
		n, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.columns, src)
		if err != nil {
			return fmt.Errorf("seed: copy %s: %w", t.name, err)
		}
		if n != int64(t.rows) {
			return fmt.Errorf("seed: copy %s: wrote %d rows, want %d", t.name, n, t.rows)
		}
	}

	for _, s := range []struct {
		table string
		maxID int
	}{{"categories", c.Categories}, {"products", c.Products}, {"reviews", c.Reviews}} {
		// With maxID 0 the sequence is left to start at 1.
		_, err := tx.Exec(ctx, "SELECT setval(pg_get_serial_sequence($1, 'id'), greatest($2::bigint, 1), $2::bigint > 0)",
			s.table, s.maxID)
		if err != nil {
			return fmt.Errorf("seed: advance %s id sequence: %w", s.table, err)
		}
	}
	return nil
}
