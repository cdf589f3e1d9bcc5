package seed_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/seed"
)

func ExampleConfig_Counts() {
	for _, scale := range []float64{0.02, seed.DefaultScale, seed.MaxScale} {
		c, err := seed.Config{Scale: scale}.Counts()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("scale %v: %d categories, %d products, %d reviews\n", scale, c.Categories, c.Products, c.Reviews)
	}
	_, err := seed.Config{Scale: 0}.Counts()
	fmt.Println(err)
	// Output:
	// scale 0.02: 40 categories, 500 products, 8000 reviews
	// scale 1: 40 categories, 25000 products, 400000 reviews
	// scale 20: 40 categories, 500000 products, 8000000 reviews
	// seed: invalid scale: 0 (want 0 < scale <= 20)
}

// Run needs a migrated database, so this example is compiled but not run.
func ExampleRun() {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	res, err := seed.Run(ctx, db, seed.Config{Scale: seed.DefaultScale})
	if err != nil {
		log.Fatal(err)
	}
	if res.Skipped {
		fmt.Printf("already seeded at scale %v\n", res.Scale)
		return
	}
	fmt.Printf("seeded %d products and %d reviews in %v\n", res.Products, res.Reviews, res.Duration)
}
