package pgfence_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
	"github.com/stampede-lab/stampede/internal/redistest"
)

// Example_copyIt is the example of the "Copy it" section of
// the stampede repository's docs/lockx.md: a write under
// the lock, fenced in Postgres by the lock's token.
func Example_copyIt() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  os.Getenv(redistest.ExampleAddrEnv), // your Redis
		ContextTimeoutEnabled: true,                                // required: every call ends at Timeout
	})
	defer rdb.Close()
	locker, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "inventory", TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	ctx := context.Background()
	db := exampleStock(ctx) // a table stock (sku, units, fence_token bigint)
	defer db.Close(ctx)
	row := pgfence.Row{Table: "stock", KeyColumn: "sku", TokenColumn: "fence_token", Key: "sku-42"}
	err = locker.Do(ctx, "sku-42", func(ctx context.Context, token int64) error {
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if err := pgfence.Claim(ctx, tx, row, token); err != nil {
				return err // pgfence.ErrStaleToken: a newer holder wrote first
			}
			_, err := tx.Exec(ctx, "UPDATE stock SET units = units - 1 WHERE sku = $1", "sku-42")
			return err
		})
	})
	fmt.Println(err)
	// Output: <nil>
}

// exampleStock connects to DATABASE_URL and creates the example's table as
// a temporary one, which only this connection sees and which ends with it.
func exampleStock(ctx context.Context) *pgx.Conn {
	db, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.Exec(ctx, `CREATE TEMP TABLE stock (sku text PRIMARY KEY, units int NOT NULL, fence_token bigint);
		INSERT INTO stock VALUES ('sku-42', 10, NULL)`)
	if err != nil {
		log.Fatal(err)
	}
	return db
}
