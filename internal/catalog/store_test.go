package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/catalog"
	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
	"github.com/stampede-lab/stampede/internal/seed"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// storeTestScale is a small catalog: 40 categories, 500 products, 8,000
// reviews.
const storeTestScale = 0.02

// seededStore returns a store on a fresh database seeded at storeTestScale,
// and the pool for independent checks.
func seededStore(t *testing.T, opts ...catalog.StoreOption) (*catalog.Store, *pgxpool.Pool) {
	t.Helper()
	db := testenv.Postgres(t)
	if _, err := seed.Run(context.Background(), db, seed.Config{Scale: storeTestScale}); err != nil {
		t.Fatalf("seed: %v", err)
	}
	return catalog.NewStore(db, opts...), db
}

// reservingStore is a Store with a Warehouse, reserving as ModeFenced does:
// every warehouse call checks the token.
type reservingStore struct {
	*catalog.Store
	w *catalog.Warehouse
}

// seededReservingStore is seededStore with the warehouse on a pool of its
// own; obs, if not nil, observes both.
func seededReservingStore(t *testing.T, obs catalog.Observer) (*reservingStore, *pgxpool.Pool) {
	t.Helper()
	var opts []catalog.StoreOption
	if obs != nil {
		opts = append(opts, catalog.WithObserver(obs))
	}
	s, db := seededStore(t, opts...)
	wdb, err := pgxpool.NewWithConfig(context.Background(), db.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wdb.Close)
	return &reservingStore{Store: s, w: catalog.NewWarehouse(wdb, obs)}, db
}

// Reserve runs a reservation's saga on the store and the warehouse as the
// Service does, under token: the intent, the fenced take (a refused one
// removes the intent), the activation; created is the activation's.
func (s *reservingStore) Reserve(ctx context.Context, productID int64, qty int, key string, token int64) (catalog.Reservation, bool, error) {
	r, created, err := s.Store.Intend(ctx, catalog.Hold{ProductID: productID, Quantity: qty, IdempotencyKey: key})
	if err != nil || (!created && r.Status != catalog.StatusPending) {
		return r, false, err
	}
	switch claimed, err := s.Store.ClaimIntent(ctx, r.ID, token); {
	case err != nil:
		return catalog.Reservation{}, false, err
	case !claimed: // another attempt of the key carried it on: answer what it made
		r, _, err := s.Store.Replay(ctx, productID, qty, key)
		return r, false, err
	}
	m := catalog.Move{Key: catalog.TakeKey(key), ProductID: productID, Units: qty}
	if err := s.w.Take(ctx, m, catalog.Fence{Token: token, Checked: true}, nil); err != nil {
		_, aerr := s.Store.Abandon(ctx, r.ID, token)
		return catalog.Reservation{}, false, errors.Join(err, aerr)
	}
	return s.Store.Activate(ctx, r.ID, token)
}

// CancelReservation runs a cancel's saga as the Service does, under token:
// the end in the catalog, then the fenced give and its record. A give that
// fails leaves it due and returns its error with the ended reservation.
func (s *reservingStore) CancelReservation(ctx context.Context, id, token int64) (catalog.Reservation, error) {
	r, _, err := s.Store.CancelReservation(ctx, id)
	if err != nil || !r.GiveDue {
		return r, err
	}
	m := catalog.Move{Key: catalog.GiveKey(r.ID), ProductID: r.ProductID, Units: r.Quantity}
	if err := s.w.Give(ctx, m, catalog.Fence{Token: token, Checked: true}); err != nil {
		return r, err
	}
	return r, s.Store.MarkGiven(ctx, r.ID)
}

func mustExec(t *testing.T, db *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func mustInt64(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var v int64
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// newCategory inserts an empty category and returns its id.
func newCategory(t *testing.T, db *pgxpool.Pool, slug string) int64 {
	t.Helper()
	return mustInt64(t, db, "INSERT INTO categories (slug, name) VALUES ($1, $1) RETURNING id", slug)
}

// newProduct inserts a product with an inventory row of the given stock.
func newProduct(t *testing.T, db *pgxpool.Pool, categoryID int64, name, description string, stock int) int64 {
	t.Helper()
	id := mustInt64(t, db, `INSERT INTO products (category_id, sku, name, description, price_cents)
		VALUES ($1, 'TEST-' || md5($2 || $3), $2, $3, 1999) RETURNING id`, categoryID, name, description)
	mustExec(t, db, "INSERT INTO inventory (product_id, stock) VALUES ($1, $2)", id, stock)
	return id
}

func TestStoreReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := seededStore(t)

	t.Run("Product", func(t *testing.T) {
		p, err := s.Product(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		var want catalog.Product
		var attrs string
		err = db.QueryRow(ctx, `SELECT id, category_id, sku, name, description, price_cents, attributes::text, created_at, updated_at
			FROM products WHERE id = 7`).Scan(&want.ID, &want.CategoryID, &want.SKU, &want.Name, &want.Description,
			&want.PriceCents, &attrs, &want.CreatedAt, &want.UpdatedAt)
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != 7 || p.CategoryID != want.CategoryID || p.SKU != want.SKU || p.Name != want.Name ||
			p.Description != want.Description || p.PriceCents != want.PriceCents ||
			!p.CreatedAt.Equal(want.CreatedAt) || !p.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("Product(7) = %+v, want %+v", p, want)
		}
		var got, exp map[string]any
		if err := json.Unmarshal(p.Attributes, &got); err != nil {
			t.Fatalf("attributes %s: %v", p.Attributes, err)
		}
		_ = json.Unmarshal([]byte(attrs), &exp)
		if fmt.Sprint(got) != fmt.Sprint(exp) || len(got) != 4 {
			t.Errorf("attributes = %s, want %s", p.Attributes, attrs)
		}
		if p.SKU != "SKU-000007" {
			t.Errorf("sku = %q, want SKU-000007", p.SKU)
		}
	})

	t.Run("ProductNotFound", func(t *testing.T) {
		for _, id := range []int64{0, -1, 1 << 40} {
			if _, err := s.Product(ctx, id); !errors.Is(err, catalog.ErrNotFound) {
				t.Errorf("Product(%d) error = %v, want ErrNotFound", id, err)
			}
		}
	})

	t.Run("Products", func(t *testing.T) {
		got, err := s.Products(ctx, []int64{3, 1, 2, 999_999, 2, -5})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("Products returned %d products, want 3 (ids 1, 2, 3): %v", len(got), slices.Collect(mapKeys(got)))
		}
		for _, id := range []int64{1, 2, 3} {
			one, err := s.Product(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := got[id]
			if !ok {
				t.Fatalf("product %d missing", id)
			}
			if p.ID != id || p.Name != one.Name || p.SKU != one.SKU || string(p.Attributes) != string(one.Attributes) {
				t.Errorf("Products[%d] = %+v, want %+v", id, p, one)
			}
		}
		empty, err := s.Products(ctx, nil)
		if err != nil || empty == nil || len(empty) != 0 {
			t.Errorf("Products(nil) = %v, %v; want an empty map", empty, err)
		}
		none, err := s.Products(ctx, []int64{999_998, 999_999})
		if err != nil || len(none) != 0 {
			t.Errorf("Products(missing) = %v, %v; want an empty map", none, err)
		}
	})

	t.Run("CategoryStats", func(t *testing.T) {
		ncat := mustInt64(t, db, "SELECT count(*) FROM categories")
		for id := int64(1); id <= ncat; id++ {
			got, err := s.CategoryStats(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want := independentStats(t, db, id)
			if got.CategoryID != id || got.Products != want.Products || got.PriceMinCents != want.PriceMinCents ||
				got.PriceMaxCents != want.PriceMaxCents || got.PriceMedianCents != want.PriceMedianCents ||
				got.Reviews != want.Reviews || got.ReviewedProducts != want.ReviewedProducts || got.Ratings != want.Ratings ||
				math.Abs(got.PriceAvgCents-want.PriceAvgCents) > 1e-6 || math.Abs(got.RatingAvg-want.RatingAvg) > 1e-9 ||
				!sameTime(got.LastReviewAt, want.LastReviewAt) {
				t.Errorf("CategoryStats(%d) =\n%+v, independent computation gives\n%+v", id, got, want)
			}
		}
		c1, _ := s.CategoryStats(ctx, 1)
		if c1.Products == 0 || c1.Reviews == 0 || c1.RatingAvg < 1 || c1.RatingAvg > 5 || c1.LastReviewAt == nil {
			t.Errorf("category 1 looks empty: %+v", c1)
		}
	})

	t.Run("CategoryStatsUnknown", func(t *testing.T) {
		if _, err := s.CategoryStats(ctx, 999); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("error = %v, want ErrNotFound", err)
		}
	})

	t.Run("TopProducts", func(t *testing.T) {
		for _, cat := range []int64{1, 2, 40} {
			got, err := s.TopProducts(ctx, cat, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := independentTop(t, db, cat)
			if len(got) != min(10, len(want)) {
				t.Fatalf("category %d: %d products, want %d", cat, len(got), min(10, len(want)))
			}
			for i, tp := range got {
				w := want[i]
				if tp.ID != w.ID || tp.Reviews != w.Reviews || math.Abs(tp.Score-w.Score) > 1e-9 ||
					math.Abs(tp.RatingAvg-w.RatingAvg) > 1e-9 || tp.CategoryID != cat || tp.Name == "" {
					t.Errorf("category %d #%d = {id %d, reviews %d, avg %v, score %v}, want {id %d, reviews %d, avg %v, score %v}",
						cat, i, tp.ID, tp.Reviews, tp.RatingAvg, tp.Score, w.ID, w.Reviews, w.RatingAvg, w.Score)
				}
			}
			again, err := s.TopProducts(ctx, cat, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, again, func(a, b catalog.TopProduct) bool { return a.ID == b.ID && a.Score == b.Score }) {
				t.Errorf("category %d: two calls disagree", cat)
			}
		}
		one, err := s.TopProducts(ctx, 1, 1)
		if err != nil || len(one) != 1 {
			t.Errorf("limit 1: %d products, %v", len(one), err)
		}
	})

	t.Run("TopProductsTies", func(t *testing.T) {
		// Products without reviews all score the prior: ties, by id.
		cat := newCategory(t, db, "ties")
		a := newProduct(t, db, cat, "Tie A", "", 1)
		b := newProduct(t, db, cat, "Tie B", "", 1)
		c := newProduct(t, db, cat, "Tie C", "", 1)
		got, err := s.TopProducts(ctx, cat, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids := []int64{}
		for _, tp := range got {
			ids = append(ids, tp.ID)
			if tp.Reviews != 0 || tp.RatingAvg != 0 || tp.Score != 0 {
				t.Errorf("unreviewed product in an unreviewed category: %+v", tp)
			}
		}
		if !slices.Equal(ids, []int64{a, b, c}) {
			t.Errorf("order = %v, want %v", ids, []int64{a, b, c})
		}
		// One five-star review makes the category mean 5, so every product
		// scores 5: c with its review, a and b with the prior alone. A tie,
		// broken by id.
		mustExec(t, db, "INSERT INTO reviews (product_id, rating) VALUES ($1, 5)", c)
		got, err = s.TopProducts(ctx, cat, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got[0].ID != a || got[2].ID != c || got[2].Reviews != 1 || got[2].RatingAvg != 5 || got[0].Score != 5 {
			t.Errorf("after one review: %+v", got)
		}
	})

	t.Run("TopProductsErrors", func(t *testing.T) {
		if _, err := s.TopProducts(ctx, 999, 10); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("unknown category: %v, want ErrNotFound", err)
		}
		empty := newCategory(t, db, "empty-top")
		got, err := s.TopProducts(ctx, empty, 10)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("empty category: %v, %v; want an empty list", got, err)
		}
		for _, limit := range []int{0, -1, catalog.MaxLimit + 1} {
			if _, err := s.TopProducts(ctx, 1, limit); !errors.Is(err, catalog.ErrInvalidArgument) {
				t.Errorf("limit %d: %v, want ErrInvalidArgument", limit, err)
			}
		}
	})

	t.Run("CategoryStatsEmpty", func(t *testing.T) {
		id := newCategory(t, db, "empty-stats")
		got, err := s.CategoryStats(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if (got != catalog.CategoryStats{CategoryID: id}) {
			t.Errorf("empty category: %+v, want zeros", got)
		}
	})

	t.Run("Search", func(t *testing.T) {
		cat := newCategory(t, db, "search")
		inDesc := newProduct(t, db, cat, "Plain Widget", "A widget that pairs well with any zanzibarite lamp.", 1)
		inName := newProduct(t, db, cat, "Zanzibarite Lamp", "A lamp.", 1)
		inBoth := newProduct(t, db, cat, "Zanzibarite Stool", "A stool in zanzibarite finish.", 1)
		hits, err := s.Search(ctx, "zanzibarite", 10)
		if err != nil {
			t.Fatal(err)
		}
		ids := []int64{}
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		if !slices.Equal(ids, []int64{inBoth, inName, inDesc}) {
			t.Errorf("search order = %v, want name+description %d, name %d, description %d; hits %+v", ids, inBoth, inName, inDesc, hits)
		}
		if len(hits) == 3 && !(hits[0].Rank > hits[1].Rank && hits[1].Rank > hits[2].Rank && hits[2].Rank > 0) {
			t.Errorf("ranks not decreasing: %v %v %v", hits[0].Rank, hits[1].Rank, hits[2].Rank)
		}
		// A phrase and an exclusion, websearch syntax.
		hits, err = s.Search(ctx, `"zanzibarite lamp" -stool`, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		if !slices.Equal(ids, []int64{inName, inDesc}) {
			t.Errorf("phrase search = %v, want %v", ids, []int64{inName, inDesc})
		}
	})

	t.Run("SearchSeeded", func(t *testing.T) {
		// The seeded catalog: a common material word, ranked and limited.
		hits, err := s.Search(ctx, "oak", 20)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || len(hits) > 20 {
			t.Fatalf("oak: %d hits", len(hits))
		}
		for i := 1; i < len(hits); i++ {
			a, b := hits[i-1], hits[i]
			if a.Rank < b.Rank || (a.Rank == b.Rank && a.ID >= b.ID) {
				t.Errorf("hits %d and %d out of order: (%v, %d) then (%v, %d)", i-1, i, a.Rank, a.ID, b.Rank, b.ID)
			}
		}
		again, _ := s.Search(ctx, "oak", 20)
		if len(again) != len(hits) || again[0].ID != hits[0].ID || again[len(again)-1].ID != hits[len(hits)-1].ID {
			t.Errorf("two searches disagree")
		}
	})

	t.Run("SearchNothing", func(t *testing.T) {
		for _, q := range []string{"", "   ", "the", "and of the", `"" -`, "!!!", "qwxzvbnm"} {
			hits, err := s.Search(ctx, q, 10)
			if err != nil || hits == nil || len(hits) != 0 {
				t.Errorf("Search(%q) = %v, %v; want an empty list", q, hits, err)
			}
		}
		for _, limit := range []int{0, catalog.MaxLimit + 1} {
			if _, err := s.Search(ctx, "oak", limit); !errors.Is(err, catalog.ErrInvalidArgument) {
				t.Errorf("limit %d: %v, want ErrInvalidArgument", limit, err)
			}
		}
	})

	t.Run("Inventory", func(t *testing.T) {
		inv, err := s.Inventory(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		stock := mustInt64(t, db, "SELECT stock FROM inventory WHERE product_id = 5")
		if inv.ProductID != 5 || int64(inv.Stock) != stock || inv.Reserved != 0 || inv.Available != inv.Stock || inv.FenceToken != 0 {
			t.Errorf("Inventory(5) = %+v, stock %d", inv, stock)
		}
		if _, err := s.Inventory(ctx, 999_999); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("unknown product: %v, want ErrNotFound", err)
		}
	})

	t.Run("Ping", func(t *testing.T) {
		if err := s.Ping(ctx); err != nil {
			t.Error(err)
		}
	})
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// independentStats computes a category's statistics from plain queries and
// Go arithmetic.
func independentStats(t *testing.T, db *pgxpool.Pool, cat int64) catalog.CategoryStats {
	t.Helper()
	ctx := context.Background()
	cs := catalog.CategoryStats{CategoryID: cat}
	rows, err := db.Query(ctx, "SELECT price_cents FROM products WHERE category_id = $1", cat)
	if err != nil {
		t.Fatal(err)
	}
	var prices []int64
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		prices = append(prices, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	cs.Products = len(prices)
	if len(prices) > 0 {
		slices.Sort(prices)
		var sum int64
		for _, p := range prices {
			sum += p
		}
		cs.PriceMinCents, cs.PriceMaxCents = prices[0], prices[len(prices)-1]
		cs.PriceAvgCents = float64(sum) / float64(len(prices))
		cs.PriceMedianCents = prices[(len(prices)+1)/2-1]
	}
	rows, err = db.Query(ctx, `SELECT rating, count(*), count(DISTINCT product_id) FROM reviews
		WHERE product_id IN (SELECT id FROM products WHERE category_id = $1) GROUP BY rating`, cat)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for rows.Next() {
		var rating, n, products int
		if err := rows.Scan(&rating, &n, &products); err != nil {
			t.Fatal(err)
		}
		cs.Ratings[rating-1] = n
		cs.Reviews += n
		total += rating * n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if cs.Reviews > 0 {
		cs.RatingAvg = float64(total) / float64(cs.Reviews)
	}
	cs.ReviewedProducts = int(mustInt64(t, db, `SELECT count(*) FROM products p
		WHERE p.category_id = $1 AND EXISTS (SELECT 1 FROM reviews r WHERE r.product_id = p.id)`, cat))
	var last *time.Time
	if err := db.QueryRow(ctx, `SELECT r.created_at FROM reviews r JOIN products p ON p.id = r.product_id
		WHERE p.category_id = $1 ORDER BY r.created_at DESC LIMIT 1`, cat).Scan(&last); err == nil {
		cs.LastReviewAt = last
	}
	return cs
}

// independentTop ranks a category's products in Go from per-product review
// counts and sums.
func independentTop(t *testing.T, db *pgxpool.Pool, cat int64) []catalog.TopProduct {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT p.id,
		(SELECT count(*) FROM reviews r WHERE r.product_id = p.id),
		(SELECT coalesce(sum(rating), 0) FROM reviews r WHERE r.product_id = p.id)
		FROM products p WHERE p.category_id = $1`, cat)
	if err != nil {
		t.Fatal(err)
	}
	type agg struct{ id, n, sum int64 }
	var all []agg
	var n, sum int64
	for rows.Next() {
		var a agg
		if err := rows.Scan(&a.id, &a.n, &a.sum); err != nil {
			t.Fatal(err)
		}
		all = append(all, a)
		n += a.n
		sum += a.sum
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	if n > 0 {
		mean = float64(sum) / float64(n)
	}
	out := make([]catalog.TopProduct, len(all))
	for i, a := range all {
		out[i].ID = a.id
		out[i].Reviews = int(a.n)
		if a.n > 0 {
			out[i].RatingAvg = float64(a.sum) / float64(a.n)
		}
		out[i].Score = (mean*catalog.PriorWeight + float64(a.sum)) / (catalog.PriorWeight + float64(a.n))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func TestUpdateProduct(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := seededStore(t)
	before, err := s.Product(ctx, 11)
	if err != nil {
		t.Fatal(err)
	}
	name, price := "Zyzzyva Reading Lamp", int64(12345)
	got, err := s.UpdateProduct(ctx, 11, catalog.ProductPatch{Name: &name, PriceCents: &price})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != name || got.PriceCents != price || got.Description != before.Description || got.SKU != before.SKU ||
		string(got.Attributes) != string(before.Attributes) || !got.CreatedAt.Equal(before.CreatedAt) || !got.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("after update: %+v\nbefore: %+v", got, before)
	}
	if now, _ := s.Product(ctx, 11); now.Name != name || now.PriceCents != price || !now.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("Product after update = %+v", now)
	}
	if hits, err := s.Search(ctx, "zyzzyva", 5); err != nil || len(hits) != 1 || hits[0].ID != 11 {
		t.Errorf("search for the new name: %+v, %v", hits, err)
	}

	desc := ""
	attrs := json.RawMessage(`{"color": "red", "new": [1, 2]}`)
	got, err = s.UpdateProduct(ctx, 11, catalog.ProductPatch{Description: &desc, Attributes: &attrs})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got.Attributes, &m); err != nil || m["color"] != "red" || len(m) != 2 || got.Description != "" || got.Name != name {
		t.Errorf("after second update: %+v (%v)", got, err)
	}

	// An empty patch is a read: nothing changes, not even updated_at.
	same, err := s.UpdateProduct(ctx, 11, catalog.ProductPatch{})
	if err != nil || !same.UpdatedAt.Equal(got.UpdatedAt) || same.Name != name {
		t.Errorf("empty patch: %+v, %v", same, err)
	}

	if _, err := s.UpdateProduct(ctx, 999_999, catalog.ProductPatch{Name: &name}); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateProduct(ctx, 999_999, catalog.ProductPatch{}); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("unknown id, empty patch: %v, want ErrNotFound", err)
	}
	blank, neg := "  ", int64(-1)
	for _, raw := range []string{`[1]`, `null`, `"x"`, `{`, `42`} {
		a := json.RawMessage(raw)
		if _, err := s.UpdateProduct(ctx, 11, catalog.ProductPatch{Attributes: &a}); !errors.Is(err, catalog.ErrInvalidArgument) {
			t.Errorf("attributes %s: %v, want ErrInvalidArgument", raw, err)
		}
	}
	for _, p := range []catalog.ProductPatch{{Name: &blank}, {PriceCents: &neg}} {
		if _, err := s.UpdateProduct(ctx, 11, p); !errors.Is(err, catalog.ErrInvalidArgument) {
			t.Errorf("patch %+v: %v, want ErrInvalidArgument", p, err)
		}
	}
	if after, _ := s.Product(ctx, 11); after.Name != name || !after.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("rejected patches changed the product: %+v", after)
	}
}

// setStock gives a product a known stock and no reservations.
func setStock(t *testing.T, db *pgxpool.Pool, productID int64, stock int) {
	t.Helper()
	mustExec(t, db, "UPDATE inventory SET stock = $2, reserved = 0 WHERE product_id = $1", productID, stock)
}

func inventoryOf(t *testing.T, s *catalog.Store, productID int64) catalog.Inventory {
	t.Helper()
	inv, err := s.Inventory(context.Background(), productID)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestReserve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := seededReservingStore(t, nil)
	setStock(t, db, 1, 10)
	setStock(t, db, 2, 10)

	r, created, err := s.Reserve(ctx, 1, 3, "order-1", 7)
	if err != nil || !created {
		t.Fatalf("Reserve = %+v, %v, %v", r, created, err)
	}
	if r.ID == 0 || r.ProductID != 1 || r.Quantity != 3 || r.Status != catalog.StatusActive || r.FenceToken != 7 ||
		r.IdempotencyKey != "order-1" || r.CreatedAt.IsZero() {
		t.Errorf("reservation = %+v", r)
	}
	if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 3 || inv.Available != 7 || inv.FenceToken != 7 {
		t.Errorf("inventory after reserve = %+v", inv)
	}

	t.Run("Replay", func(t *testing.T) {
		again, created, err := s.Reserve(ctx, 1, 3, "order-1", 8)
		if err != nil || created || again.ID != r.ID || again.FenceToken != 7 {
			t.Errorf("replay = %+v, %v, %v; want reservation %d, not created", again, created, err, r.ID)
		}
		// Even with a stale token: a replay writes nothing.
		again, created, err = s.Reserve(ctx, 1, 3, "order-1", 1)
		if err != nil || created || again.ID != r.ID {
			t.Errorf("stale replay = %+v, %v, %v", again, created, err)
		}
		if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 3 || inv.FenceToken != 7 {
			t.Errorf("inventory after replays = %+v", inv)
		}
	})

	t.Run("Mismatch", func(t *testing.T) {
		for _, c := range []struct {
			product int64
			qty     int
		}{{1, 4}, {2, 3}} {
			if _, _, err := s.Reserve(ctx, c.product, c.qty, "order-1", 7); !errors.Is(err, catalog.ErrIdempotencyMismatch) {
				t.Errorf("product %d qty %d: %v, want ErrIdempotencyMismatch", c.product, c.qty, err)
			}
		}
		if inv := inventoryOf(t, s.Store, 2); inv.Reserved != 0 {
			t.Errorf("mismatch reserved stock: %+v", inv)
		}
	})

	t.Run("InsufficientStock", func(t *testing.T) {
		_, _, err := s.Reserve(ctx, 1, 8, "order-2", 9)
		if !errors.Is(err, catalog.ErrInsufficientStock) {
			t.Fatalf("8 of 7 available: %v, want ErrInsufficientStock", err)
		}
		// Nothing was written but the token: a fenced read is an access.
		if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 3 || inv.Available != 7 || inv.FenceToken != 9 {
			t.Errorf("inventory after refusal = %+v", inv)
		}
		if n := mustInt64(t, db, "SELECT count(*) FROM reservations WHERE idempotency_key = 'order-2'"); n != 0 {
			t.Errorf("%d reservations for a refused request", n)
		}
		// The exact remainder is fine, and the key can now be used.
		if r2, created, err := s.Reserve(ctx, 1, 7, "order-2", 9); err != nil || !created || r2.Quantity != 7 {
			t.Errorf("7 of 7 available: %+v, %v, %v", r2, created, err)
		}
		if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 10 || inv.Available != 0 {
			t.Errorf("inventory when sold out = %+v", inv)
		}
		if _, _, err := s.Reserve(ctx, 1, 1, "order-3", 9); !errors.Is(err, catalog.ErrInsufficientStock) {
			t.Errorf("sold out: %v, want ErrInsufficientStock", err)
		}
	})

	t.Run("StaleToken", func(t *testing.T) {
		if _, _, err := s.Reserve(ctx, 2, 1, "order-4", 20); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.Reserve(ctx, 2, 1, "order-5", 19)
		if !errors.Is(err, pgfence.ErrStaleToken) {
			t.Fatalf("older token: %v, want pgfence.ErrStaleToken", err)
		}
		if inv := inventoryOf(t, s.Store, 2); inv.Reserved != 1 || inv.FenceToken != 20 {
			t.Errorf("inventory after stale write = %+v", inv)
		}
		if n := mustInt64(t, db, "SELECT count(*) FROM reservations WHERE idempotency_key = 'order-5'"); n != 0 {
			t.Errorf("stale write inserted %d reservations", n)
		}
		// The same token is the same holder writing again.
		if _, created, err := s.Reserve(ctx, 2, 1, "order-6", 20); err != nil || !created {
			t.Errorf("equal token: %v, %v", created, err)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		if _, _, err := s.Reserve(ctx, 999_999, 1, "order-7", 1); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("unknown product: %v, want ErrNotFound", err)
		}
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		for _, c := range []struct {
			qty int
			key string
		}{{0, "k"}, {-1, "k"}, {1, ""}, {1, "   "}, {1, fmt.Sprintf("%0*d", catalog.MaxIdempotencyKeyLen+1, 0)}, {1, "\xff"}} {
			if _, _, err := s.Reserve(ctx, 1, c.qty, c.key, 1); !errors.Is(err, catalog.ErrInvalidArgument) {
				t.Errorf("qty %d key %q: %v, want ErrInvalidArgument", c.qty, c.key, err)
			}
		}
		// The longest key is accepted, in characters rather than bytes.
		key := ""
		for range catalog.MaxIdempotencyKeyLen {
			key += "é"
		}
		setStock(t, db, 3, 5)
		if _, created, err := s.Reserve(ctx, 3, 1, key, 1); err != nil || !created {
			t.Errorf("key of %d characters: %v, %v", catalog.MaxIdempotencyKeyLen, created, err)
		}
	})
}

func TestReserveConcurrentSameKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := seededReservingStore(t, nil)
	setStock(t, db, 1, 100)

	const n = 20
	var wg sync.WaitGroup
	results := make([]catalog.Reservation, n)
	created := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], created[i], errs[i] = s.Reserve(ctx, 1, 2, "same-key", int64(5))
		})
	}
	close(start)
	wg.Wait()
	creators := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if created[i] {
			creators++
		}
		if results[i].ID != results[0].ID || results[i].Quantity != 2 {
			t.Errorf("goroutine %d got %+v, goroutine 0 got %+v", i, results[i], results[0])
		}
	}
	if creators != 1 {
		t.Errorf("%d calls created a reservation, want 1", creators)
	}
	if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 2 {
		t.Errorf("reserved = %d, want 2", inv.Reserved)
	}
	if c := mustInt64(t, db, "SELECT count(*) FROM reservations"); c != 1 {
		t.Errorf("%d reservations, want 1", c)
	}
}

// TestReserveConcurrentSameKeyTwoProducts races one key over two products:
// their inventory locks do not serialise the requests, so the loser hits the
// unique constraint and must answer with the winner's reservation (same
// product) or ErrIdempotencyMismatch (other product), never a raw error.
func TestReserveConcurrentSameKeyTwoProducts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := seededReservingStore(t, nil)
	setStock(t, db, 1, 100)
	setStock(t, db, 2, 100)

	for round := range 10 {
		key := fmt.Sprintf("race-%d", round)
		const n = 10
		var wg sync.WaitGroup
		type result struct {
			product int64
			res     catalog.Reservation
			created bool
			err     error
		}
		results := make([]result, n)
		start := make(chan struct{})
		for i := range n {
			product := int64(1 + i%2)
			wg.Go(func() {
				<-start
				r, c, err := s.Reserve(ctx, product, 1, key, 1)
				results[i] = result{product, r, c, err}
			})
		}
		close(start)
		wg.Wait()
		var winner catalog.Reservation
		creators := 0
		for _, r := range results {
			if r.created {
				creators++
				winner = r.res
			}
		}
		if creators != 1 {
			t.Fatalf("round %d: %d creators, want 1: %+v", round, creators, results)
		}
		for i, r := range results {
			switch {
			case r.product == winner.ProductID:
				if r.err != nil || r.res.ID != winner.ID {
					t.Errorf("round %d, goroutine %d (winner's product): %+v, %v", round, i, r.res, r.err)
				}
			case !errors.Is(r.err, catalog.ErrIdempotencyMismatch):
				t.Errorf("round %d, goroutine %d (other product): %v, want ErrIdempotencyMismatch", round, i, r.err)
			}
		}
	}
	inv1, inv2 := inventoryOf(t, s.Store, 1), inventoryOf(t, s.Store, 2)
	if inv1.Reserved+inv2.Reserved != 10 {
		t.Errorf("reserved %d + %d, want 10 (one unit per round)", inv1.Reserved, inv2.Reserved)
	}
}

// TestReserveFencedNoOversell: more buyers than units, at once, with no
// lock at all but each with a token of its own, as holders of lost locks
// would be: the fenced warehouse refuses every read-modify-write a newer
// token overtook, so no units are oversold and the warehouse's count stays
// exact.
func TestReserveFencedNoOversell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := seededReservingStore(t, nil)
	setStock(t, db, 4, 10)
	const n = 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, short, stale := 0, 0, 0
	for i := range n {
		wg.Go(func() {
			_, _, err := s.Reserve(ctx, 4, 1, fmt.Sprintf("buyer-%d", i), int64(i+1))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, catalog.ErrInsufficientStock):
				short++
			case errors.Is(err, pgfence.ErrStaleToken):
				stale++
			default:
				t.Errorf("buyer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	t.Logf("%d reserved, %d short, %d stale", ok, short, stale)
	inv := inventoryOf(t, s.Store, 4)
	if ok < 1 || ok > 10 || inv.Reserved != ok || inv.Available != 10-ok || inv.Oversold != 0 {
		t.Errorf("%d reserved; inventory = %+v, want reserved = %d, available = %d, nothing oversold", ok, inv, ok, 10-ok)
	}
	if held := mustInt64(t, db, "SELECT coalesce(sum(quantity), 0) FROM reservations WHERE product_id = 4 AND status = 'active'"); held != int64(ok) {
		t.Errorf("%d units held by reservations, %d answered", held, ok)
	}
}

func TestCancelReservation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := seededReservingStore(t, nil)
	setStock(t, db, 1, 10)
	r, _, err := s.Reserve(ctx, 1, 4, "to-cancel", 3)
	if err != nil {
		t.Fatal(err)
	}

	got, err := s.CancelReservation(ctx, r.ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || got.Status != catalog.StatusCancelled || got.FenceToken != 3 || got.Quantity != 4 ||
		!got.CreatedAt.Equal(r.CreatedAt) || !got.UpdatedAt.After(r.UpdatedAt) {
		t.Errorf("cancelled = %+v, reserved = %+v", got, r)
	}
	if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 0 || inv.Available != 10 || inv.FenceToken != 4 {
		t.Errorf("inventory after cancel = %+v", inv)
	}

	// Idempotent: the second cancel changes nothing, whatever its token.
	for _, token := range []int64{4, 5, 1} {
		again, err := s.CancelReservation(ctx, r.ID, token)
		if err != nil || again.Status != catalog.StatusCancelled || !again.UpdatedAt.Equal(got.UpdatedAt) || again.GiveDue {
			t.Errorf("cancel again with token %d: %+v, %v", token, again, err)
		}
	}
	if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 0 || inv.Available != 10 || inv.FenceToken != 4 {
		t.Errorf("inventory after repeated cancels = %+v", inv)
	}
	// A replay of the original request returns the cancelled reservation.
	if replayed, created, err := s.Reserve(ctx, 1, 4, "to-cancel", 9); err != nil || created || replayed.Status != catalog.StatusCancelled {
		t.Errorf("replay after cancel: %+v, %v, %v", replayed, created, err)
	}

	// A give with a stale token is refused: the hold has ended all the same
	// (the catalog commits first), its units stay out of the warehouse and
	// their give stays due until a holder with a newer token applies it.
	t.Run("StaleToken", func(t *testing.T) {
		r2, _, err := s.Reserve(ctx, 1, 2, "stale-cancel", 10)
		if err != nil {
			t.Fatal(err)
		}
		ended, err := s.CancelReservation(ctx, r2.ID, 9)
		if !errors.Is(err, pgfence.ErrStaleToken) || ended.Status != catalog.StatusCancelled || !ended.GiveDue {
			t.Fatalf("cancel with an older token: %+v, %v; want cancelled, give due, pgfence.ErrStaleToken", ended, err)
		}
		if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 0 || inv.Available != 8 {
			t.Errorf("inventory after a stale give = %+v, want none reserved and the 2 units out", inv)
		}
		if _, err := s.CancelReservation(ctx, r2.ID, 11); err != nil {
			t.Fatal(err)
		}
		if inv := inventoryOf(t, s.Store, 1); inv.Reserved != 0 || inv.Available != 10 {
			t.Errorf("inventory after the give = %+v", inv)
		}
		if due, err := s.GivesDue(ctx, 10); err != nil || len(due) != 0 {
			t.Errorf("gives due: %+v, %v", due, err)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		if _, err := s.CancelReservation(ctx, 999_999, 100); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("unknown reservation: %v, want ErrNotFound", err)
		}
		// An intent is not a reservation yet.
		p, _, err := s.Intend(ctx, catalog.Hold{ProductID: 1, Quantity: 1, IdempotencyKey: "intent-only"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CancelReservation(ctx, p.ID, 100); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("cancel of an intent: %v, want ErrNotFound", err)
		}
		if _, err := s.Reservation(ctx, p.ID); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("read of an intent: %v, want ErrNotFound", err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		r3, _, err := s.Reserve(ctx, 1, 3, "cancel-race", 12)
		if err != nil {
			t.Fatal(err)
		}
		before := inventoryOf(t, s.Store, 1)
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if _, err := s.CancelReservation(ctx, r3.ID, 12); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if inv := inventoryOf(t, s.Store, 1); inv.Reserved != before.Reserved-3 || inv.Available != before.Available+3 {
			t.Errorf("after 10 concurrent cancels of 3: %+v, was %+v", inv, before)
		}
	})
}

func TestStoreObserverAndDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[string]int{}
	obs := func(q string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		seen[q]++
		if d <= 0 {
			t.Errorf("%s: duration %v", q, d)
		}
	}
	s, db := seededReservingStore(t, obs)
	setStock(t, db, 1, 10)

	name := "Observed"
	calls := []func() error{
		func() error { _, err := s.Product(ctx, 1); return err },
		func() error { _, err := s.Products(ctx, []int64{1, 2}); return err },
		func() error { _, err := s.CategoryStats(ctx, 1); return err },
		func() error { _, err := s.TopProducts(ctx, 1, 5); return err },
		func() error { _, err := s.Search(ctx, "oak", 5); return err },
		func() error { _, err := s.UpdateProduct(ctx, 1, catalog.ProductPatch{Name: &name}); return err },
		func() error { _, err := s.Inventory(ctx, 1); return err },
		func() error {
			if _, found, err := s.Replay(ctx, 1, 1, "observed"); err != nil || found {
				return errors.Join(err, errors.New("a new key replayed"))
			}
			r, _, err := s.Reserve(ctx, 1, 1, "observed", 1)
			if err != nil {
				return err
			}
			if _, err := s.Reservation(ctx, r.ID); err != nil {
				return err
			}
			_, err = s.CancelReservation(ctx, r.ID, 1)
			return err
		},
		func() error { _, err := s.ExpiredReservations(ctx, 10); return err },
		func() error { _, err := s.GivesDue(ctx, 10); return err },
		func() error { _, err := s.StalePending(ctx, time.Minute, 10); return err },
		func() error { // an intent given up
			r, _, err := s.Intend(ctx, catalog.Hold{ProductID: 1, Quantity: 1, IdempotencyKey: "given-up"})
			if err != nil {
				return err
			}
			_, err = s.Abandon(ctx, r.ID, 0)
			return err
		},
		func() error { // a hold not due: nothing to expire, one expire query all the same
			r, _, err := s.Intend(ctx, catalog.Hold{ProductID: 1, Quantity: 1, IdempotencyKey: "not-due"})
			if err == nil { // its take, recorded behind the observer's back
				_, err = db.Exec(ctx, "INSERT INTO warehouse_moves (move_key, product_id, units) VALUES ($1, 1, 1)", catalog.TakeKey("not-due"))
			}
			if err == nil {
				_, _, err = s.Activate(ctx, r.ID, 2)
			}
			if err != nil {
				return err
			}
			_, ended, err := s.ExpireReservation(ctx, r.ID)
			if ended {
				err = errors.Join(err, errors.New("a hold not due was expired"))
			}
			return err
		},
	}
	for _, call := range calls {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	// Errors are observed too.
	if _, err := s.Product(ctx, 999_999); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatal(err)
	}
	mu.Lock()
	for _, q := range catalog.QueryNames() {
		want := 1
		switch q {
		case catalog.QueryProduct, catalog.QueryWarehouseRead, catalog.QueryWarehouseWrite: // reserve and cancel each read and write
			want = 2
		case catalog.QueryActivate, catalog.QueryReconcile: // the hold not due was made active directly; two scans
			want = 2
		case catalog.QueryReserve: // and an intent given up
			want = 3
		}
		if seen[q] != want {
			t.Errorf("observer saw %q %d times, want %d", q, seen[q], want)
		}
	}
	if len(seen) != len(catalog.QueryNames()) {
		t.Errorf("observer saw %v, want exactly %v", seen, catalog.QueryNames())
	}
	mu.Unlock()

	t.Run("Delay", func(t *testing.T) {
		s.SetDelay(catalog.FixedDelay(60 * time.Millisecond))
		start := time.Now()
		if _, err := s.Product(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 60*time.Millisecond {
			t.Errorf("delayed query took %v, want >= 60ms", d)
		}
	})

	t.Run("DelayRespectsContext", func(t *testing.T) {
		s.SetDelay(catalog.FixedDelay(time.Hour))
		cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.CategoryStats(cctx, 1)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d >= time.Minute {
			t.Errorf("cancelled delay returned after %v: the hour's delay, not the 30ms deadline", d)
		}
	})

	t.Run("DelayError", func(t *testing.T) {
		boom := errors.New("injected")
		s.SetDelay(func(context.Context) error { return boom })
		if _, _, err := s.Reserve(ctx, 1, 1, "never", 1); !errors.Is(err, boom) {
			t.Errorf("error = %v, want the delay's error", err)
		}
		s.SetDelay(nil)
		if _, err := s.Product(ctx, 1); err != nil {
			t.Errorf("after SetDelay(nil): %v", err)
		}
		if n := mustInt64(t, db, "SELECT count(*) FROM reservations WHERE idempotency_key = 'never'"); n != 0 {
			t.Errorf("a refused delay still reserved")
		}
	})

	if err := s.Ping(ctx); err != nil {
		t.Error(err)
	}
	if len(catalog.QueryNames()) != 20 {
		t.Errorf("QueryNames = %v", catalog.QueryNames())
	}
}
