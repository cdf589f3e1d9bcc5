// Package pgfence makes Postgres the last line of defence behind a lock: a
// write carries the lock's fencing token and is refused when the row has
// already seen a newer one.
//
// A lock can be lost without its holder noticing in time (a long GC pause,
// a stalled VM, a slow network), and then two holders write. Fencing makes
// the storage order the writers by token: the holder whose lock expired
// carries the older token and its write is rejected with ErrStaleToken.
//
//	tx, _ := pool.Begin(ctx)
//	if err := pgfence.Claim(ctx, tx, pgfence.Row{Table: "warehouse", KeyColumn: "product_id",
//		TokenColumn: "fence_token", Key: productID}, lock.Token()); err != nil {
//		return err // ErrStaleToken: another holder has written since
//	}
//	// ... the writes the lock protects, in the same transaction ...
//	return tx.Commit(ctx)
//
// Claim takes the row's lock (UPDATE) for the rest of the transaction, so a
// stale writer that arrives while a newer one is still in its transaction
// waits for it and is then refused.
package pgfence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

var (
	// ErrStaleToken means the row was written under a newer lock: the
	// caller's lock was lost, and its write must not happen.
	ErrStaleToken = errors.New("pgfence: stale fencing token")
	// ErrNoRow means no row has the key.
	ErrNoRow = errors.New("pgfence: no such row")
)

// Row names the fenced row: a table, the column that identifies the row and
// its value, and the bigint column that holds the last writer's token.
// Table may be schema-qualified ("inventory.warehouse"); every name is
// quoted, so it must match the database's exactly (lower case unless it was
// created quoted). The token column may be nullable: NULL means no writer
// has claimed the row yet, and any token claims it.
type Row struct {
	Table, KeyColumn, TokenColumn string
	Key                           any
}

// table quotes r.Table, each part of a schema-qualified name on its own.
func (r Row) table() string { return pgx.Identifier(strings.Split(r.Table, ".")).Sanitize() }

// Claim records token as the row's fencing token inside tx and locks the
// row until tx ends; it succeeds exactly when the row's token is at most
// token (an equal one can only be the same holder's: no two holders ever
// carry the same token). It returns ErrStaleToken when
// the row has a larger token, ErrNoRow when there is no such row, and the
// database's error otherwise.
func Claim(ctx context.Context, tx pgx.Tx, r Row, token int64) error {
	table := r.table()
	key := pgx.Identifier{r.KeyColumn}.Sanitize()
	col := pgx.Identifier{r.TokenColumn}.Sanitize()
	tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = $1 WHERE %s = $2 AND (%s <= $1 OR %s IS NULL)", table, col, key, col, col), token, r.Key)
	if err != nil {
		return fmt.Errorf("pgfence: claim %s %v: %w", r.Table, r.Key, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var current *int64 // not NULL here: the UPDATE would have claimed it
	err = tx.QueryRow(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1", col, table, key), r.Key).Scan(&current)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %s %v", ErrNoRow, r.Table, r.Key)
	case err != nil:
		return fmt.Errorf("pgfence: read %s %v: %w", r.Table, r.Key, err)
	}
	return fmt.Errorf("%w: %s %v has token %d, the write carries %d", ErrStaleToken, r.Table, r.Key, *current, token)
}
