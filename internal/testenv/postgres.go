package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/migrations"
)

// Postgres returns a pool on a fresh database with every migration applied,
// private to the test and dropped at its end. The database is cloned from a
// template built once per schema (named after the migrations' checksum), so a
// call costs milliseconds.
func Postgres(tb TB) *pgxpool.Pool {
	tb.Helper()
	u := PostgresURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		tb.Fatalf("testenv: connect to test database: %v", err)
	}
	tb.Cleanup(pool.Close) // runs before the drop registered by PostgresURL
	return pool
}

// PostgresURL creates a fresh migrated database like Postgres and returns its
// connection string, for code under test that connects by itself (e.g. a
// DATABASE_URL). The database is dropped at the end of the test, even if
// connections to it are still open.
func PostgresURL(tb TB) string {
	tb.Helper()
	skipShort(tb, "Postgres")
	admin := postgresServer(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		tb.Fatalf("testenv: template database: %v", err)
	}
	name := "stampede_test_" + randomHex(6)
	if err := adminExec(ctx, admin, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tmpl)); err != nil {
		tb.Fatalf("testenv: create test database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("testenv: drop test database %s: %v", name, err)
		}
	})
	u, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return u
}

// templateLock serialises template builds across test binaries; advisory
// locks are per database, and every builder locks on the admin database.
const templateLock = 0x7374616d70656465 // "stampede"

// ensureTemplate returns the name of a template database holding the current
// schema, building it if no earlier run did. A half-built template (a crashed
// build) is never used: it is built under another name and renamed when done.
func ensureTemplate(ctx context.Context, admin string) (string, error) {
	sum, err := migrations.Checksum()
	if err != nil {
		return "", err
	}
	name := "stampede_tmpl_" + sum[:16]
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock)

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + building + " WITH (FORCE)",
		"CREATE DATABASE " + building,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", err
		}
	}
	u, err := withDatabase(admin, building)
	if err != nil {
		return "", err
	}
	tconn, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", err
	}
	_, err = migrations.Apply(ctx, tconn)
	tconn.Close(context.Background())
	if err != nil {
		return "", err
	}
	for _, q := range []string{
		"ALTER DATABASE " + building + " RENAME TO " + name,
		"ALTER DATABASE " + name + " WITH IS_TEMPLATE true",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", err
		}
	}
	return name, nil
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// postgresServer finds a Postgres server on which the test may create
// databases and returns a connection string for its admin database.
func postgresServer(tb TB) string {
	tb.Helper()
	if u := os.Getenv("DATABASE_URL"); u != "" {
		if err := canConnect(u); err != nil {
			tb.Fatalf("testenv: DATABASE_URL does not answer: %v", err)
		}
		return u
	}
	var tried []string
	for _, u := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"host=/var/run/postgresql user=postgres dbname=postgres",
	} {
		err := canConnect(u)
		if err == nil {
			return u
		}
		tried = append(tried, fmt.Sprintf("%s: %v", u, err))
	}
	if u, err := privatePostgres(tb); err == nil {
		return u
	} else {
		tried = append(tried, "initdb/pg_ctl: "+err.Error())
	}
	if ok, why := dockerAvailable(); ok {
		return startPostgresContainer(tb)
	} else {
		tried = append(tried, "Docker for testcontainers: "+why)
	}
	missing(tb, "Postgres server",
		"Set DATABASE_URL to a server where this role may CREATE DATABASE, run Postgres locally "+
			"(Debian/Ubuntu: apt-get install -y postgresql; trust auth for user postgres on 127.0.0.1:5432), "+
			"or start a Docker engine for testcontainers.", tried)
	return ""
}

func canConnect(connString string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// withDatabase returns connString pointed at another database, in either of
// the two forms libpq accepts (URL or key=value).
func withDatabase(connString, db string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("parse connection string: %w", err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}
	if strings.Contains(connString, "=") || connString == "" {
		return strings.TrimSpace(connString + " dbname=" + db), nil // a later key wins
	}
	return "", errors.New("connection string is neither a URL nor key=value pairs")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
