package testenv_test

import (
	"context"
	"testing"

	"github.com/stampede-lab/stampede/internal/testenv"
)

func TestPostgresDatabasesAreIsolatedAndMigrated(t *testing.T) {
	ctx := context.Background()
	a, b := testenv.Postgres(t), testenv.Postgres(t)

	var dbA, dbB string
	if err := a.QueryRow(ctx, "SELECT current_database()").Scan(&dbA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, "SELECT current_database()").Scan(&dbB); err != nil {
		t.Fatal(err)
	}
	if dbA == dbB {
		t.Fatalf("both calls got database %s", dbA)
	}

	// Migrated: the tables exist in both.
	if _, err := a.Exec(ctx, "INSERT INTO categories (id, slug, name) VALUES (1, 'a-only', 'A only')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM categories").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("second database sees %d categories written to the first", n)
	}
	if err := a.QueryRow(ctx, "SELECT count(*) FROM categories").Scan(&n); err != nil || n != 1 {
		t.Fatalf("first database has %d categories (err %v), want 1", n, err)
	}
}

func TestPostgresDatabaseIsDroppedAtCleanup(t *testing.T) {
	ctx := context.Background()
	admin := testenv.Postgres(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		if err := testenv.Postgres(t).QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}
