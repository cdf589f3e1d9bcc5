package seed

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// checksumQueries hash each seeded table: the md5 of the concatenated md5s of
// its rows' text forms, in key order. Hashing row hashes keeps the aggregated
// string at 32 bytes per row, far below Postgres's 1 GB limit even at
// MaxScale. products.search is left out: it is derived from name and
// description by the server's text-search configuration, which can differ
// between Postgres versions. seed_info.seeded_at is left out: it is the wall
// time of the load.
var checksumQueries = [...]struct{ table, query string }{
	{"categories", `SELECT md5(coalesce(string_agg(md5(t::text), '' ORDER BY t.id), ''))
		FROM (SELECT id, slug, name, created_at FROM categories) t`},
	{"products", `SELECT md5(coalesce(string_agg(md5(t::text), '' ORDER BY t.id), ''))
		FROM (SELECT id, category_id, sku, name, description, price_cents, attributes, created_at, updated_at
		      FROM products) t`},
	{"inventory", `SELECT md5(coalesce(string_agg(md5(t::text), '' ORDER BY t.product_id), ''))
		FROM (SELECT product_id, stock, reserved, updated_at FROM inventory) t`},
	{"reviews", `SELECT md5(coalesce(string_agg(md5(t::text), '' ORDER BY t.id), ''))
		FROM (SELECT id, product_id, rating, title, body, created_at FROM reviews) t`},
	{"seed_info", `SELECT md5(coalesce(string_agg(md5(t::text), ''), ''))
		FROM (SELECT scale, categories, products, reviews FROM seed_info) t`},
}

// Checksum returns a hex MD5 digest of the seeded data: every row of
// categories, products, inventory and reviews, and seed_info without its
// seeded_at time. Two databases seeded at the same scale have the same
// checksum, whatever their server time zone or date style; any change to a
// row (a reservation updating inventory, an edited product) changes it.
//
// It reads all tables in one REPEATABLE READ, read-only transaction, so it
// sees a single snapshot.
func Checksum(ctx context.Context, db DB) (string, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return "", fmt.Errorf("seed: checksum: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only; nothing to keep

	// Fix the settings that shape the text form of timestamps and floats.
	_, err = tx.Exec(ctx, `SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'; SET LOCAL extra_float_digits = 1`)
	if err != nil {
		return "", fmt.Errorf("seed: checksum: set session: %w", err)
	}
	h := md5.New()
	for _, q := range checksumQueries {
		var sum string
		if err := tx.QueryRow(ctx, q.query).Scan(&sum); err != nil {
			return "", fmt.Errorf("seed: checksum %s: %w", q.table, err)
		}
		fmt.Fprintf(h, "%s %s\n", q.table, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
