// Package migrations holds stampede's numbered SQL migrations, embedded in
// every binary that imports it, and applies them with tern.
//
// Files are named NNN_what.sql and run in number order, each in its own
// transaction. Apply is idempotent and safe to call from several processes at
// once: tern serialises migrators on a Postgres advisory lock and reads the
// current version only after taking it, so the second process finds the work
// done and applies nothing.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// VersionTable is the table in which tern records the applied version.
const VersionTable = "public.schema_version"

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// Result says what one Apply call did.
type Result struct {
	// Version is the schema version the database has after the call.
	Version int32
	// Applied names the migrations this call ran, in order; it is empty when
	// the database was already current (or another process got there first).
	Applied []string
}

// Apply migrates the database behind conn to the newest version. When the
// database is already current it changes nothing and Result.Applied is empty.
func Apply(ctx context.Context, conn *pgx.Conn) (Result, error) {
	m, err := migrate.NewMigrator(ctx, conn, VersionTable)
	if err != nil {
		return Result{}, fmt.Errorf("migrations: prepare: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return Result{}, fmt.Errorf("migrations: load: %w", err)
	}
	var res Result
	m.OnStart = func(_ int32, name, _, _ string) { res.Applied = append(res.Applied, name) }
	if err := m.Migrate(ctx); err != nil {
		return res, fmt.Errorf("migrations: apply: %w", err)
	}
	if res.Version, err = m.GetCurrentVersion(ctx); err != nil {
		return res, fmt.Errorf("migrations: read version: %w", err)
	}
	return res, nil
}

// Checksum is a hex SHA-256 over the names and contents of all migration
// files. Two trees with the same checksum build the same schema; the test
// harness names its template database after it.
func Checksum() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("migrations: checksum: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
