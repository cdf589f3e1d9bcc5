package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
)

// Errors the store returns, wrapped: test them with errors.Is. A write
// refused by fencing returns an error matching pgfence.ErrStaleToken.
var (
	// ErrNotFound means no product, category, inventory row or reservation
	// has the given id.
	ErrNotFound = errors.New("catalog: not found")
	// ErrInsufficientStock means a reservation asked for more units than
	// are available (stock - reserved).
	ErrInsufficientStock = errors.New("catalog: insufficient stock")
	// ErrIdempotencyMismatch means an idempotency key was reused for a
	// reservation of another product or quantity.
	ErrIdempotencyMismatch = errors.New("catalog: idempotency key reused with different parameters")
	// ErrInvalidArgument means an argument is out of range: a limit outside
	// 1..MaxLimit, a quantity below 1, a blank or too long idempotency key,
	// a blank name, a negative price or attributes that are not a JSON
	// object.
	ErrInvalidArgument = errors.New("catalog: invalid argument")
)

// MaxLimit is the largest limit TopProducts and Search accept.
const MaxLimit = 100

// MaxIdempotencyKeyLen is the longest idempotency key, in characters (the
// schema's check constraint).
const MaxIdempotencyKeyLen = 200

// Query names: the label values the observer receives, one per Store method.
const (
	QueryProduct       = "product"
	QueryProducts      = "products"
	QueryCategoryStats = "category_stats"
	QueryTopProducts   = "top_products"
	QuerySearch        = "search"
	QueryUpdateProduct = "update_product"
	QueryInventory     = "inventory"
	QueryReserve       = "reserve"
	QueryReplay        = "replay"
	QueryCancel        = "cancel"
	QueryReservation   = "reservation"
	QuerySweep         = "sweep"
	QueryExpire        = "expire"
	QueryActivate      = "activate"
	QueryAbandon       = "abandon"
	QueryClaimIntent   = "claim_intent"
	QueryMarkGiven     = "mark_given"
	QueryReconcile     = "reconcile"
)

// QueryNames returns every query name, for pre-registering metric labels.
func QueryNames() []string {
	return []string{
		QueryProduct, QueryProducts, QueryCategoryStats, QueryTopProducts, QuerySearch,
		QueryUpdateProduct, QueryInventory, QueryReserve, QueryReplay, QueryCancel,
		QueryReservation, QuerySweep, QueryExpire, QueryActivate, QueryClaimIntent, QueryAbandon, QueryMarkGiven, QueryReconcile,
		QueryWarehouseRead, QueryWarehouseWrite,
	}
}

// Observer receives the duration of every store call, by query name
// (QueryNames), whether it succeeded or not. It must be cheap and safe for
// concurrent use (a Prometheus histogram's Observe is both).
type Observer func(query string, d time.Duration)

// DelayFunc is called before every query; it is how failure injection adds
// database latency. It must return promptly with ctx.Err() (or another
// error) when ctx ends; the store then returns that error without querying.
type DelayFunc func(ctx context.Context) error

// FixedDelay returns a DelayFunc that waits d, or until ctx ends.
func FixedDelay(d time.Duration) DelayFunc {
	return func(ctx context.Context) error {
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithObserver makes the store report each call's duration to obs.
func WithObserver(obs Observer) StoreOption {
	return func(s *Store) { s.observe = obs }
}

// WithDelay installs a DelayFunc from the start (see Store.SetDelay).
func WithDelay(f DelayFunc) StoreOption {
	return func(s *Store) { s.SetDelay(f) }
}

// Store runs the catalog's queries on Postgres. It is safe for concurrent
// use.
//
// Each method is one query name (QueryNames): the observer sees its whole
// duration, including the injected delay and, for Reserve and Cancel, the
// whole transaction with its waits for row locks.
type Store struct {
	db      *pgxpool.Pool
	observe Observer
	delay   atomic.Pointer[DelayFunc]

	// lostCommit, set by tests before use, turns a successful commit into
	// its error: a reply lost after the command ran.
	lostCommit func() error
}

// NewStore returns a store on db.
func NewStore(db *pgxpool.Pool, opts ...StoreOption) *Store {
	s := &Store{db: db}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetDelay replaces the function called before every query; nil removes
// it. It may be called at any time, concurrently with queries.
func (s *Store) SetDelay(f DelayFunc) {
	if f == nil {
		s.delay.Store(nil)
		return
	}
	s.delay.Store(&f)
}

// Ping checks that the database answers. It is not delayed or observed: it
// serves readiness probes, not the API.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.Ping(ctx); err != nil {
		return fmt.Errorf("catalog: ping: %w", err)
	}
	return nil
}

// run times f under query name q, after the injected delay, and prefixes
// its error.
func (s *Store) run(ctx context.Context, q string, f func() error) error {
	start := time.Now()
	err := s.wait(ctx)
	if err == nil {
		err = f()
	}
	if s.observe != nil {
		s.observe(q, time.Since(start))
	}
	if err != nil {
		return fmt.Errorf("catalog: %s: %w", q, err)
	}
	return nil
}

func (s *Store) wait(ctx context.Context) error {
	if f := s.delay.Load(); f != nil {
		if err := (*f)(ctx); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Product returns the product with the given id, or ErrNotFound.
func (s *Store) Product(ctx context.Context, id int64) (Product, error) {
	var p Product
	err := s.run(ctx, QueryProduct, func() error {
		err := s.db.QueryRow(ctx, sqlProduct, id).Scan(productDest(&p)...)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("product %d: %w", id, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Product{}, err
	}
	return p, nil
}

// Products returns the products with the given ids, in one query, keyed by
// id. Ids with no product are absent from the map; duplicates are harmless.
// No ids means an empty map and no query.
func (s *Store) Products(ctx context.Context, ids []int64) (map[int64]Product, error) {
	out := make(map[int64]Product, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := s.run(ctx, QueryProducts, func() error {
		rows, err := s.db.Query(ctx, sqlProducts, ids)
		if err != nil {
			return err
		}
		var p Product
		_, err = pgx.ForEachRow(rows, productDest(&p), func() error {
			out[p.ID] = p // Scan gives each row its own Attributes array
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CategoryStats computes the statistics of a category: product count and
// prices, and the count, mean and distribution of its products' ratings. It
// returns ErrNotFound for an unknown category; an empty category has zero
// statistics. This is the catalog's expensive query: it reads every review
// of the category (tens of milliseconds at the default seed scale, see
// docs/api.md), which is why the API caches it.
func (s *Store) CategoryStats(ctx context.Context, categoryID int64) (CategoryStats, error) {
	var cs CategoryStats
	err := s.run(ctx, QueryCategoryStats, func() error {
		err := s.db.QueryRow(ctx, sqlCategoryStats, customPlan, categoryID).Scan(
			&cs.CategoryID, &cs.Products, &cs.PriceMinCents, &cs.PriceMaxCents, &cs.PriceAvgCents, &cs.PriceMedianCents,
			&cs.Reviews, &cs.ReviewedProducts, &cs.RatingAvg,
			&cs.Ratings[0], &cs.Ratings[1], &cs.Ratings[2], &cs.Ratings[3], &cs.Ratings[4],
			&cs.LastReviewAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("category %d: %w", categoryID, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return CategoryStats{}, err
	}
	return cs, nil
}

// TopProducts returns up to limit (1..MaxLimit) products of a category,
// best first by Bayesian average rating: each product's ratings plus
// PriorWeight virtual reviews at the category's mean rating. Ties go to the
// lower id, so the order is deterministic. It returns ErrNotFound for an
// unknown category and an empty list for an empty one.
func (s *Store) TopProducts(ctx context.Context, categoryID int64, limit int) ([]TopProduct, error) {
	if err := checkLimit(limit); err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", QueryTopProducts, err)
	}
	out := []TopProduct{}
	err := s.run(ctx, QueryTopProducts, func() error {
		rows, err := s.db.Query(ctx, sqlTopProducts, customPlan, categoryID, limit, float64(PriorWeight))
		if err != nil {
			return err
		}
		var tp TopProduct
		dest := append(productDest(&tp.Product), &tp.Reviews, &tp.RatingAvg, &tp.Score)
		if _, err := pgx.ForEachRow(rows, dest, func() error {
			out = append(out, tp)
			return nil
		}); err != nil {
			return err
		}
		if len(out) > 0 {
			return nil
		}
		var exists bool
		if err := s.db.QueryRow(ctx, sqlCategoryExists, categoryID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("category %d: %w", categoryID, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Search returns up to limit (1..MaxLimit) products matching a web-search
// style query (words, "quoted phrases", -excluded, or), best first by
// full-text rank, ties by id. Words match their English stems in the name
// and description; name matches rank higher. A blank query, or one of stop
// words only, returns an empty list without error.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	if err := checkLimit(limit); err != nil {
		return nil, fmt.Errorf("catalog: %s: %w", QuerySearch, err)
	}
	out := []SearchHit{}
	if strings.TrimSpace(query) == "" {
		return out, nil
	}
	err := s.run(ctx, QuerySearch, func() error {
		rows, err := s.db.Query(ctx, sqlSearch, customPlan, query, limit)
		if err != nil {
			return err
		}
		var h SearchHit
		dest := append(productDest(&h.Product), &h.Rank)
		_, err = pgx.ForEachRow(rows, dest, func() error {
			out = append(out, h)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateProduct applies a partial update and returns the product as it is
// now; updated_at becomes the transaction time. An empty patch changes
// nothing (not even updated_at) and returns the current product. It returns
// ErrNotFound for an unknown id and ErrInvalidArgument for a blank name, a
// negative price or attributes that are not a JSON object.
func (s *Store) UpdateProduct(ctx context.Context, id int64, patch ProductPatch) (Product, error) {
	if err := patch.validate(); err != nil {
		return Product{}, fmt.Errorf("catalog: %s: %w", QueryUpdateProduct, err)
	}
	var p Product
	err := s.run(ctx, QueryUpdateProduct, func() error {
		var row pgx.Row
		if patch.IsEmpty() {
			row = s.db.QueryRow(ctx, sqlProduct, id)
		} else {
			var attrs *string
			if patch.Attributes != nil {
				a := string(*patch.Attributes)
				attrs = &a
			}
			row = s.db.QueryRow(ctx, sqlUpdateProduct, id, patch.Name, patch.Description, patch.PriceCents, attrs)
		}
		err := row.Scan(productDest(&p)...)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("product %d: %w", id, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Product{}, err
	}
	return p, nil
}

func (p ProductPatch) validate() error {
	if p.Name != nil && strings.TrimSpace(*p.Name) == "" {
		return fmt.Errorf("%w: blank name", ErrInvalidArgument)
	}
	if p.PriceCents != nil && *p.PriceCents < 0 {
		return fmt.Errorf("%w: negative price %d", ErrInvalidArgument, *p.PriceCents)
	}
	if p.Attributes != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(*p.Attributes, &obj); err != nil || obj == nil {
			return fmt.Errorf("%w: attributes must be a JSON object", ErrInvalidArgument)
		}
	}
	return nil
}

// Inventory returns the stock of a product, or ErrNotFound.
func (s *Store) Inventory(ctx context.Context, productID int64) (Inventory, error) {
	var inv Inventory
	err := s.run(ctx, QueryInventory, func() error {
		err := s.db.QueryRow(ctx, sqlInventory, productID).Scan(
			&inv.ProductID, &inv.Stock, &inv.Reserved, &inv.Available, &inv.FenceToken, &inv.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("inventory of product %d: %w", productID, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Inventory{}, err
	}
	inv.Oversold = max(0, inv.Reserved-inv.Stock)
	return inv, nil
}

// MaxStock is the largest stock SetStock accepts.
const MaxStock = 1_000_000

// SetStock sets a product's stock in one transaction, as a stocktake that
// counts both stores at once: intents whose take the warehouse applied
// become active holds, takes that no reservation holds are voided, gives
// still due are recorded as applied, and the warehouse gets stock -
// reserved (the schema's trigger) whatever it held
// (docs/api.md#stocktake). A checked fence claims the warehouse row first.
// It returns the inventory after, ErrNotFound or ErrInvalidArgument (stock
// outside 0..MaxStock). Observed as the inventory query.
func (s *Store) SetStock(ctx context.Context, productID int64, stock int, f Fence) (Inventory, error) {
	if stock < 0 || stock > MaxStock {
		return Inventory{}, fmt.Errorf("catalog: %w: stock must be within 0..%d, got %d", ErrInvalidArgument, MaxStock, stock)
	}
	err := s.run(ctx, QueryInventory, func() error {
		return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
			if f.Checked {
				err := pgfence.Claim(ctx, tx, warehouseRow(productID), f.Token)
				if errors.Is(err, pgfence.ErrNoRow) {
					return fmt.Errorf("warehouse of product %d: %w", productID, ErrNotFound)
				}
				if err != nil {
					return err
				}
			}
			for _, q := range stocktakeRepair() {
				if _, err := tx.Exec(ctx, q, productID); err != nil {
					return err
				}
			}
			tag, err := tx.Exec(ctx, "UPDATE inventory SET stock = $2, updated_at = now() WHERE product_id = $1", productID, stock)
			if err == nil && tag.RowsAffected() == 0 {
				return fmt.Errorf("inventory of product %d: %w", productID, ErrNotFound)
			}
			return err
		})
	})
	if err != nil {
		return Inventory{}, err
	}
	return s.Inventory(ctx, productID)
}

// customPlan, passed as the first query argument, runs a statement unnamed
// (describe, then execute), so Postgres plans each call for its actual
// arguments rather than maybe switching to a generic plan; why:
// docs/api.md#database-queries-and-what-they-cost (Custom plans).
const customPlan = pgx.QueryExecModeDescribeExec

func checkLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return fmt.Errorf("%w: limit %d (want 1..%d)", ErrInvalidArgument, limit, MaxLimit)
	}
	return nil
}

// productDest returns scan destinations for productColumns.
func productDest(p *Product) []any {
	return []any{&p.ID, &p.CategoryID, &p.SKU, &p.Name, &p.Description, &p.PriceCents,
		(*[]byte)(&p.Attributes), &p.CreatedAt, &p.UpdatedAt}
}

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// commit commits tx. Its error leaves the outcome unknown: the commit may
// have run without its reply arriving (the lostCommit test hook makes it so).
func (s *Store) commit(ctx context.Context, tx pgx.Tx) error {
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if s.lostCommit != nil {
		return s.lostCommit()
	}
	return nil
}
