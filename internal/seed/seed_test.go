package seed

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/testenv"
)

const testScale = 0.02

func mustRun(t testing.TB, db DB, scale float64) Result {
	t.Helper()
	res, err := Run(context.Background(), db, Config{Scale: scale})
	if err != nil {
		t.Fatalf("Run(scale %v): %v", scale, err)
	}
	return res
}

func mustChecksum(t testing.TB, db DB) string {
	t.Helper()
	sum, err := Checksum(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func TestRunDeterministic(t *testing.T) {
	t.Parallel()
	dbs := []*pgxpool.Pool{testenv.Postgres(t), testenv.Postgres(t), testenv.Postgres(t)}
	// The second database renders timestamps in another zone: the checksum
	// must not depend on session settings.
	if _, err := dbs[1].Exec(context.Background(), "ALTER DATABASE "+dbs[1].Config().ConnConfig.Database+" SET TimeZone = 'Asia/Tokyo'"); err != nil {
		t.Fatal(err)
	}
	dbs[1].Reset()

	mustRun(t, dbs[0], testScale)
	mustRun(t, dbs[1], testScale)
	mustRun(t, dbs[2], testScale*2)
	a, b, other := mustChecksum(t, dbs[0]), mustChecksum(t, dbs[1]), mustChecksum(t, dbs[2])
	if a != b {
		t.Errorf("same scale, different checksums: %s and %s", a, b)
	}
	if a == other {
		t.Errorf("scales %v and %v have the same checksum %s", testScale, testScale*2, a)
	}
}

func TestRunIdempotent(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres(t)
	first := mustRun(t, db, testScale)
	if first.Skipped {
		t.Fatal("first Run skipped")
	}
	sum := mustChecksum(t, db)

	second := mustRun(t, db, testScale)
	if !second.Skipped || second.Scale != testScale || second.Counts != first.Counts {
		t.Errorf("second Run = %+v, want skipped with %+v", second, first.Counts)
	}
	if got := mustChecksum(t, db); got != sum {
		t.Errorf("checksum changed from %s to %s", sum, got)
	}

	_, err := Run(context.Background(), db, Config{Scale: testScale * 2})
	if !errors.Is(err, ErrScaleMismatch) {
		t.Errorf("Run at another scale: %v, want ErrScaleMismatch", err)
	}
	if got := mustChecksum(t, db); got != sum {
		t.Errorf("checksum changed from %s to %s after a refused Run", sum, got)
	}
}

func TestRunRefusesUnrecordedRows(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres(t)
	if _, err := db.Exec(context.Background(), "INSERT INTO categories (slug, name) VALUES ('x', 'X')"); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), db, Config{Scale: testScale}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("Run on a non-empty database: %v, want ErrNotEmpty", err)
	}
}

func TestRunInvalidScale(t *testing.T) {
	// No database needed: the config is checked first.
	if _, err := Run(context.Background(), nil, Config{}); !errors.Is(err, ErrInvalidScale) {
		t.Errorf("Run(Config{}) = %v, want ErrInvalidScale", err)
	}
}

func TestRunCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Postgres(t)
	res := mustRun(t, db, testScale)
	want := mustCounts(t, testScale)
	if res.Counts != want || res.Scale != testScale {
		t.Errorf("Result = %+v, want scale %v and %+v", res, testScale, want)
	}

	var got Counts
	var inventory, inventoryMatched, badRatings, stats int
	var info Counts
	var infoScale float64
	err := db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM categories),
		(SELECT count(*) FROM products),
		(SELECT count(*) FROM reviews),
		(SELECT count(*) FROM inventory),
		(SELECT count(*) FROM inventory i JOIN products p ON p.id = i.product_id
		  JOIN warehouse w ON w.product_id = i.product_id AND w.available = i.stock AND w.fence_token = 0
		  WHERE i.stock BETWEEN 0 AND 500 AND i.reserved = 0),
		(SELECT count(*) FROM reviews WHERE rating NOT BETWEEN 1 AND 5),
		(SELECT count(DISTINCT tablename) FROM pg_stats WHERE schemaname = 'public'
		  AND tablename IN ('categories', 'products', 'inventory', 'reviews'))`).
		Scan(&got.Categories, &got.Products, &got.Reviews, &inventory, &inventoryMatched, &badRatings, &stats)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("tables hold %+v, want %+v", got, want)
	}
	if inventory != want.Products || inventoryMatched != want.Products {
		t.Errorf("inventory: %d rows, %d matching a product with valid fields and a stocked warehouse row; want %d", inventory, inventoryMatched, want.Products)
	}
	if badRatings != 0 {
		t.Errorf("%d reviews with a rating outside 1..5", badRatings)
	}
	if stats != 4 {
		t.Errorf("planner statistics for %d of 4 tables, want all (ANALYZE)", stats)
	}
	err = db.QueryRow(ctx, "SELECT scale, categories, products, reviews FROM seed_info").
		Scan(&infoScale, &info.Categories, &info.Products, &info.Reviews)
	if err != nil {
		t.Fatal(err)
	}
	if info != want || infoScale != testScale {
		t.Errorf("seed_info = %v %+v, want %v %+v", infoScale, info, testScale, want)
	}

	// Identity sequences continue after the explicit ids.
	var catID, productID, reviewID int64
	err = db.QueryRow(ctx, "INSERT INTO categories (slug, name) VALUES ('new', 'New') RETURNING id").Scan(&catID)
	if err != nil {
		t.Fatal(err)
	}
	err = db.QueryRow(ctx, "INSERT INTO products (category_id, sku, name, price_cents) VALUES ($1, 'NEW-1', 'New', 100) RETURNING id", catID).Scan(&productID)
	if err != nil {
		t.Fatal(err)
	}
	err = db.QueryRow(ctx, "INSERT INTO reviews (product_id, rating) VALUES ($1, 5) RETURNING id", productID).Scan(&reviewID)
	if err != nil {
		t.Fatal(err)
	}
	if catID != int64(want.Categories+1) || productID != int64(want.Products+1) || reviewID != int64(want.Reviews+1) {
		t.Errorf("next ids %d, %d, %d; want %d, %d, %d", catID, productID, reviewID, want.Categories+1, want.Products+1, want.Reviews+1)
	}
}

func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	db := testenv.Postgres(t)
	const n = 3
	var wg sync.WaitGroup
	results := make([]Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = Run(context.Background(), db, Config{Scale: testScale}) })
	}
	wg.Wait()
	loaded := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Run %d: %v", i, errs[i])
		}
		if !results[i].Skipped {
			loaded++
		}
	}
	if loaded != 1 {
		t.Errorf("%d of %d concurrent Runs loaded, want exactly 1: %+v", loaded, n, results)
	}
	var products, reviews int
	if err := db.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM products), (SELECT count(*) FROM reviews)").Scan(&products, &reviews); err != nil {
		t.Fatal(err)
	}
	if want := mustCounts(t, testScale); products != want.Products || reviews != want.Reviews {
		t.Errorf("%d products and %d reviews, want %+v", products, reviews, want)
	}
}
