package pgfence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
	"github.com/stampede-lab/stampede/internal/redistest"
)

// ledger is the fenced row of the tests' own table.
func ledger(id int64) pgfence.Row {
	return pgfence.Row{Table: "ledger", KeyColumn: "id", TokenColumn: "fence_token", Key: id}
}

// newLedger creates the tests' table with row 1 and returns the database.
func newLedger(t *testing.T) *pgxpool.Pool {
	t.Helper()
	db := database(t)
	_, err := db.Exec(context.Background(), `
		CREATE TABLE ledger (id bigint PRIMARY KEY, total integer NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0);
		INSERT INTO ledger (id) VALUES (1);`)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// reserve is the protected write: claim the row with the token, then
// change it, in one transaction.
func reserve(ctx context.Context, db *pgxpool.Pool, token int64, qty int) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := pgfence.Claim(ctx, tx, ledger(1), token); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE ledger SET total = total + $1 WHERE id = 1", qty)
		return err
	})
}

// TestKleppmannScenario: holder A pauses past its TTL, B acquires and
// writes, A wakes and writes: A's write is rejected, B's stands.
func TestKleppmannScenario(t *testing.T) {
	ctx := context.Background()
	db := newLedger(t)
	node := redistest.New(t)
	newLocker := func() *lockx.Locker {
		opt := node.Options()
		opt.ContextTimeoutEnabled = true
		rdb := redis.NewClient(opt)
		t.Cleanup(func() { _ = rdb.Close() })
		// No watchdog: a process-wide pause (GC, a frozen VM) stops it too.
		l, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "inventory", TTL: 100 * time.Millisecond, NoWatchdog: true, Wait: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	a, b := newLocker(), newLocker()

	lockA, err := a.Acquire(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	<-lockA.Context().Done() // A pauses; its lock runs out meanwhile
	lockB, err := b.Acquire(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	if err := reserve(ctx, db, lockB.Token(), 3); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	// A wakes up and, unaware, writes with its old token.
	if err := reserve(ctx, db, lockA.Token(), 5); !errors.Is(err, pgfence.ErrStaleToken) {
		t.Fatalf("A's late write: %v, want ErrStaleToken", err)
	}
	var reserved int
	var fence int64
	if err := db.QueryRow(ctx, "SELECT total, fence_token FROM ledger WHERE id = 1").Scan(&reserved, &fence); err != nil {
		t.Fatal(err)
	}
	if reserved != 3 || fence != lockB.Token() {
		t.Fatalf("reserved %d with fence %d, want B's 3 with token %d", reserved, fence, lockB.Token())
	}
	// B may write again under the same lock (equal token).
	if err := reserve(ctx, db, lockB.Token(), 1); err != nil {
		t.Fatalf("B's second write: %v", err)
	}
	_ = lockB.Release()
}

func TestClaimMissingRow(t *testing.T) {
	ctx := context.Background()
	db := newLedger(t)
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return pgfence.Claim(ctx, tx, ledger(99), 1) })
	if !errors.Is(err, pgfence.ErrNoRow) {
		t.Fatalf("Claim on a missing row: %v, want ErrNoRow", err)
	}
}

// TestStaleWriterWaitsForTheNewerTransaction: the row lock taken by Claim
// makes a stale writer that arrives mid-transaction wait, then fail.
func TestStaleWriterWaitsForTheNewerTransaction(t *testing.T) {
	ctx := context.Background()
	db := newLedger(t)
	newer, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgfence.Claim(ctx, newer, ledger(1), 20); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- reserve(ctx, db, 10, 1) }()
	// The stale writer blocks on the row lock until the newer one commits.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the stale writer finished while the newer transaction was open: %v", err)
		default:
		}
		var waiting int
		err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stale writer never waited for the row lock")
		}
	}
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, pgfence.ErrStaleToken) {
		t.Fatalf("stale writer: %v, want ErrStaleToken", err)
	}
}

// An equal token is accepted only because no two holders ever carry the
// same one: here the lock's server crashes while A holds the lock and comes
// back from a snapshot taken before A acquired it (so it has forgotten A's
// token), B acquires, writes, and A, unaware, writes too. B's token must
// differ from A's (and be larger), so A's write is refused.
func TestTwoHoldersNeverCarryTheSameToken(t *testing.T) {
	ctx := context.Background()
	db := newLedger(t)
	node := redistest.New(t)
	opt := node.Options()
	opt.ContextTimeoutEnabled, opt.MaxRetries = true, -1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	l, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "inventory", TTL: time.Second, NoWatchdog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	seen := map[int64]int{} // token -> holder
	for holder := range 20 {
		if holder%5 == 0 {
			redistest.Must(t, node.Snapshot(ctx)) // the next holders' tokens are lost with the crash below
		}
		lockA, err := l.Acquire(ctx, "1")
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := seen[lockA.Token()]; ok {
			t.Fatalf("holders %d and %d carry the same token %d", h, holder, lockA.Token())
		}
		seen[lockA.Token()] = holder
		if holder%5 != 4 {
			_ = lockA.Release()
			continue
		}
		// A holds and pauses; the server crashes and comes back from the
		// snapshot, without A's lock or its token.
		redistest.Must(t, node.RestartFromSnapshot(ctx))
		lockB, err := l.Acquire(ctx, "1")
		if err != nil {
			t.Fatal(err)
		}
		if lockB.Token() <= lockA.Token() {
			t.Fatalf("after the restart B got token %d, not above A's %d", lockB.Token(), lockA.Token())
		}
		seen[lockB.Token()] = holder
		if err := reserve(ctx, db, lockB.Token(), 1); err != nil {
			t.Fatalf("B's write: %v", err)
		}
		if err := reserve(ctx, db, lockA.Token(), 1); !errors.Is(err, pgfence.ErrStaleToken) {
			t.Fatalf("A's write after B's: %v, want ErrStaleToken", err)
		}
		_ = lockB.Release()
	}
	var reserved int
	if err := db.QueryRow(ctx, "SELECT total FROM ledger WHERE id = 1").Scan(&reserved); err != nil {
		t.Fatal(err)
	}
	if reserved != 4 { // one write per round, B's only
		t.Fatalf("reserved %d, want 4 (B's writes only)", reserved)
	}
}

// TestNullableTokenColumnAndQualifiedTable: a row whose token column is
// NULL (never claimed) is claimed by any token, then fenced as usual; a
// schema-qualified table is found. Before, the claim of a NULL row failed
// with "cannot scan NULL into *int64", and "schema.table" was quoted as one
// name.
func TestNullableTokenColumnAndQualifiedTable(t *testing.T) {
	ctx := context.Background()
	db := database(t)
	_, err := db.Exec(ctx, `CREATE SCHEMA fenced;
		CREATE TABLE fenced.stock (sku text PRIMARY KEY, token bigint);
		INSERT INTO fenced.stock (sku) VALUES ('a');`)
	if err != nil {
		t.Fatal(err)
	}
	row := pgfence.Row{Table: "fenced.stock", KeyColumn: "sku", TokenColumn: "token", Key: "a"}
	claim := func(token int64) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return pgfence.Claim(ctx, tx, row, token) })
	}
	if err := claim(5); err != nil {
		t.Fatalf("the first claim of a NULL token: %v", err)
	}
	if err := claim(4); !errors.Is(err, pgfence.ErrStaleToken) {
		t.Errorf("an older token after 5: %v, want ErrStaleToken", err)
	}
	if err := claim(6); err != nil {
		t.Errorf("a newer token: %v", err)
	}
	row.Key = "missing"
	if err := claim(7); !errors.Is(err, pgfence.ErrNoRow) {
		t.Errorf("a missing row: %v, want ErrNoRow", err)
	}
}
