package migrations_test

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/stampede-lab/stampede/internal/testenv"
	"github.com/stampede-lab/stampede/migrations"
)

// emptyDatabase returns the connection string of a fresh database whose
// schema has been wiped, so migrations start from nothing.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	u := testenv.PostgresURL(t)
	conn := connect(t, u)
	if _, err := conn.Exec(context.Background(), "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
		t.Fatal(err)
	}
	return u
}

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func allMigrations(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(migrations.FS(), "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded migrations: %v %v", names, err)
	}
	return names
}

func TestApplyIsIdempotent(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, emptyDatabase(t))
	want := allMigrations(t)

	first, err := migrations.Apply(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Applied, want) || first.Version != int32(len(want)) {
		t.Fatalf("first Apply = %+v, want all of %v", first, want)
	}
	second, err := migrations.Apply(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Applied) != 0 || second.Version != first.Version {
		t.Fatalf("second Apply = %+v, want nothing applied at version %d", second, first.Version)
	}
}

func TestApplyConcurrentlyRunsEachMigrationOnce(t *testing.T) {
	ctx := context.Background()
	u := emptyDatabase(t)
	want := allMigrations(t)

	const processes = 4
	conns := make([]*pgx.Conn, processes)
	for i := range conns {
		conns[i] = connect(t, u)
	}
	results := make([]migrations.Result, processes)
	errs := make([]error, processes)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range processes {
		done.Go(func() {
			start.Wait()
			results[i], errs[i] = migrations.Apply(ctx, conns[i])
		})
	}
	start.Done()
	done.Wait()

	var applied []string
	for i := range processes {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		if results[i].Version != int32(len(want)) {
			t.Errorf("migrator %d ended at version %d, want %d", i, results[i].Version, len(want))
		}
		applied = append(applied, results[i].Applied...)
	}
	slices.Sort(applied)
	if !slices.Equal(applied, want) {
		t.Fatalf("migrations run across all migrators = %v, want each of %v exactly once", applied, want)
	}
}

func TestSchemaEnforcesInventoryAndReservationRules(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	if _, err := db.Exec(ctx, `
		INSERT INTO categories (id, slug, name) VALUES (1, 'c', 'C');
		INSERT INTO products (id, category_id, sku, name, price_cents) VALUES (1, 1, 'SKU-1', 'Blue mug', 900);
		INSERT INTO inventory (product_id, stock) VALUES (1, 5);
		INSERT INTO reservations (product_id, quantity, fence_token, idempotency_key, expires_at) VALUES (1, 1, 7, 'k1', now());`); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		sql        string
		constraint string
	}{
		"reserved below zero": {"UPDATE inventory SET reserved = -1 WHERE product_id = 1", "inventory_reserved_not_negative"},
		"stock below zero":    {"UPDATE inventory SET stock = -1 WHERE product_id = 1", "inventory_stock_check"},
		"repeated idempotency key": {
			"INSERT INTO reservations (product_id, quantity, fence_token, idempotency_key, expires_at) VALUES (1, 1, 8, 'k1', now())",
			"reservations_idempotency_key_key",
		},
		"unknown status": {
			"UPDATE reservations SET status = 'held' WHERE idempotency_key = 'k1'",
			"reservations_status_check",
		},
		"zero quantity": {
			"INSERT INTO reservations (product_id, quantity, fence_token, idempotency_key, expires_at) VALUES (1, 0, 8, 'k2', now())",
			"reservations_quantity_check",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := db.Exec(ctx, tc.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.ConstraintName != tc.constraint {
				t.Fatalf("got %v, want a violation of %s", err, tc.constraint)
			}
		})
	}

	// The warehouse was stocked when the inventory row was inserted, is
	// restocked when the stock is set, and is left alone by reservations;
	// reserved above stock (an oversell) is recorded, not refused.
	available := func() (n int) {
		t.Helper()
		if err := db.QueryRow(ctx, "SELECT available FROM warehouse WHERE product_id = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := available(); n != 5 {
		t.Errorf("warehouse stocked with %d units, want 5", n)
	}
	if _, err := db.Exec(ctx, "UPDATE inventory SET reserved = 6 WHERE product_id = 1"); err != nil {
		t.Fatalf("an oversell is refused: %v", err)
	}
	if n := available(); n != 5 {
		t.Errorf("a change of reserved changed the warehouse to %d", n)
	}
	if _, err := db.Exec(ctx, "UPDATE inventory SET stock = 8, reserved = 2 WHERE product_id = 1"); err != nil {
		t.Fatal(err)
	}
	if n := available(); n != 6 {
		t.Errorf("a stocktake set the warehouse to %d, want 8 - 2", n)
	}

	// Full-text search over the generated column finds the product by stem.
	var id int64
	if err := db.QueryRow(ctx, "SELECT id FROM products WHERE search @@ websearch_to_tsquery('english', 'mugs')").Scan(&id); err != nil || id != 1 {
		t.Fatalf("search for mugs: id %d, err %v", id, err)
	}
}
