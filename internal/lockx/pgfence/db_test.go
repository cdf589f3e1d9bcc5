package pgfence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// prefixEnv names the environment variable that sets the prefix of the
// databases the tests create (default defaultPrefix): lower-case letters,
// digits and underscores, starting with a letter.
const (
	prefixEnv     = "PGFENCE_TEST_DB_PREFIX"
	defaultPrefix = "pgfence_test_"
)

// databaseName returns a fresh database name: the prefix from prefixEnv
// and 12 random hex digits.
func databaseName() (string, error) {
	prefix := os.Getenv(prefixEnv)
	if prefix == "" {
		prefix = defaultPrefix
	}
	if !regexp.MustCompile(`^[a-z][a-z0-9_]{0,40}$`).MatchString(prefix) {
		return "", fmt.Errorf("%s=%q: want lower-case letters, digits and underscores, starting with a letter, at most 41", prefixEnv, prefix)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b), nil
}

// database returns a pool on a fresh database of the Postgres server that
// DATABASE_URL names (the role must be allowed to CREATE DATABASE), named
// by databaseName; the database is dropped when the test ends. The tests
// talk to no other server.
func database(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Postgres; skipped under -short")
	}
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		t.Fatal("set DATABASE_URL to a Postgres server on which this role may CREATE DATABASE " +
			"(e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); " + prefixEnv + " sets the prefix of the databases created (default " + defaultPrefix + ")")
	}
	name, err := databaseName()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("DATABASE_URL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropDatabase(t, admin, name) })
	cfg, err := pgxpool.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // runs before the drop
	return pool
}

func dropDatabase(t *testing.T, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	if err != nil {
		t.Errorf("drop database %s: %v", name, err)
	}
}

// TestDatabasesTakeTheChosenPrefix: the database a test gets is named by
// PGFENCE_TEST_DB_PREFIX, and a prefix that is not a plain identifier is
// refused before any database is created.
func TestDatabasesTakeTheChosenPrefix(t *testing.T) {
	t.Setenv(prefixEnv, "pgfence_chosen_")
	pool := database(t)
	var name string
	if err := pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "pgfence_chosen_") {
		t.Errorf("the test's database is %q, want the prefix pgfence_chosen_", name)
	}
	for _, bad := range []string{"x; DROP DATABASE postgres; --", "Upper_", "1st_", strings.Repeat("a", 42)} {
		t.Setenv(prefixEnv, bad)
		if name, err := databaseName(); err == nil {
			t.Errorf("prefix %q: database name %q, want an error", bad, name)
		}
	}
}
