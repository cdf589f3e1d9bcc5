package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/seed"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// BenchmarkQueryCosts measures each store query on a catalog seeded at the
// default scale and prints a Markdown table and the aggregates' plans. A
// measurement, so a benchmark: it runs only when asked, once:
//
//	go test -run '^$' -bench QueryCosts -benchtime 1x -v ./internal/catalog/
//
// Its STAMPEDE_QUERY_COSTS_* variables: docs/api.md#reproduce.
func BenchmarkQueryCosts(b *testing.B) {
	t := testing.TB(b)
	scale := envFloat(t, "STAMPEDE_QUERY_COSTS_SCALE", seed.DefaultScale)
	runs := int(envFloat(t, "STAMPEDE_QUERY_COSTS_RUNS", 20))
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = stampedeCallers
	parallel := os.Getenv("STAMPEDE_QUERY_COSTS_NOPARALLEL") == ""
	if !parallel {
		cfg.ConnConfig.RuntimeParams["max_parallel_workers_per_gather"] = "0"
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	res, err := seed.Run(ctx, db, seed.Config{Scale: scale})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded scale %v: %+v in %v", scale, res.Counts, res.Duration.Round(time.Millisecond))
	vacuumed := os.Getenv("STAMPEDE_QUERY_COSTS_NOVACUUM") == ""
	if vacuumed {
		if _, err := db.Exec(ctx, "VACUUM (ANALYZE) categories, products, reviews, inventory, reservations"); err != nil {
			t.Fatal(err)
		}
	}
	var version string
	if err := db.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		samples []time.Duration
	)
	s := NewStore(db, WithObserver(func(_ string, d time.Duration) {
		mu.Lock()
		samples = append(samples, d)
		mu.Unlock()
	}))
	// Sequential calls: the warehouse can share the pool.
	w, fence := NewWarehouse(db, nil), Fence{Token: 1, Checked: true}
	var largest, smallest int64
	if err := db.QueryRow(ctx, `SELECT (array_agg(category_id ORDER BY n DESC, category_id))[1],
		(array_agg(category_id ORDER BY n, category_id))[1]
		FROM (SELECT category_id, count(*) AS n FROM products GROUP BY category_id) c`).Scan(&largest, &smallest); err != nil {
		t.Fatal(err)
	}
	products := int64(res.Products)
	categories := int64(res.Categories)
	pid := func(i int) int64 { return 1 + int64(i*7919)%products } // spread over the table
	var reservations []int64
	reserved := 0

	type row struct {
		name, what string
		call       func(i int) error
	}
	rows := []row{
		{"product", "one product by primary key", func(i int) error { _, err := s.Product(ctx, pid(i)); return err }},
		{"products", "50 products by id, one `= ANY($1)` query", func(i int) error {
			ids := make([]int64, 50)
			for j := range ids {
				ids[j] = pid(i*50 + j)
			}
			_, err := s.Products(ctx, ids)
			return err
		}},
		{"category_stats", fmt.Sprintf("largest category (%d)", largest), func(int) error { _, err := s.CategoryStats(ctx, largest); return err }},
		{"category_stats", fmt.Sprintf("smallest category (%d)", smallest), func(int) error { _, err := s.CategoryStats(ctx, smallest); return err }},
		{"category_stats", "every category in turn", func(i int) error { _, err := s.CategoryStats(ctx, 1+int64(i)%categories); return err }},
		{"category_stats", fmt.Sprintf("a stampede: %d concurrent calls, largest category (%d); latency of each call", stampedeCallers, largest), func(int) error {
			var wg sync.WaitGroup
			errs := make([]error, stampedeCallers)
			for i := range stampedeCallers {
				wg.Go(func() { _, errs[i] = s.CategoryStats(ctx, largest) })
			}
			wg.Wait()
			return errors.Join(errs...)
		}},
		{"top_products", fmt.Sprintf("top 50, largest category (%d)", largest), func(int) error { _, err := s.TopProducts(ctx, largest, 50); return err }},
		{"top_products", fmt.Sprintf("top 50, smallest category (%d)", smallest), func(int) error { _, err := s.TopProducts(ctx, smallest, 50); return err }},
		{"top_products", "top 50, every category in turn", func(i int) error { _, err := s.TopProducts(ctx, 1+int64(i)%categories, 50); return err }},
		{"search", "20 hits, selective words (`oak`, `walnut lamp`, `\"side table\"`, `ergonomic -chair`)", func(i int) error {
			q := []string{"oak", "walnut lamp", `"side table"`, "ergonomic -chair"}[i%4]
			_, err := s.Search(ctx, q, 20)
			return err
		}},
		{"search", "20 hits, a common word (`made`: 6,136 matches to rank)", func(int) error { _, err := s.Search(ctx, "made", 20); return err }},
		{"update_product", "set the price of one product", func(i int) error {
			price := int64(1000 + i)
			_, err := s.UpdateProduct(ctx, pid(i), ProductPatch{PriceCents: &price})
			return err
		}},
		{"inventory", "one inventory row", func(i int) error { _, err := s.Inventory(ctx, pid(i)); return err }},
		{"reserve", "one unit, new key (the saga: intent insert, claim, fenced warehouse read and write, activation with the reserved update)", func(i int) error {
			h := Hold{ProductID: pid(i), Quantity: 1, IdempotencyKey: "cost-" + strconv.Itoa(i)}
			r, _, err := s.Intend(ctx, h)
			if err == nil {
				_, err = s.ClaimIntent(ctx, r.ID, fence.Token)
			}
			if err == nil {
				err = w.Take(ctx, Move{Key: TakeKey(h.IdempotencyKey), ProductID: h.ProductID, Units: 1}, fence, nil)
			}
			if err == nil {
				_, _, err = s.Activate(ctx, r.ID, fence.Token)
			}
			switch {
			case err == nil:
				reservations = append(reservations, r.ID)
				reserved++
			case errors.Is(err, ErrInsufficientStock):
				_, err = s.Abandon(ctx, r.ID, fence.Token) // an out-of-stock product: a full saga all the same
			}
			return err
		}},
		{"cancel", "cancel one of those (the saga: end with the reserved update, fenced warehouse read and write, settle)", func(i int) error {
			if len(reservations) == 0 {
				return nil
			}
			id := reservations[i%len(reservations)]
			r, _, err := s.CancelReservation(ctx, id)
			if err == nil && r.GiveDue {
				err = w.Give(ctx, giveMove(r), fence)
			}
			if err == nil && r.GiveDue {
				err = s.MarkGiven(ctx, id)
			}
			return err
		}},
	}

	var out strings.Builder
	state := "vacuumed"
	if !vacuumed {
		state = "not vacuumed"
	}
	if !parallel {
		state += ", no parallel workers"
	}
	fmt.Fprintf(&out, "Postgres %s, seed scale %v (%d categories, %d products, %d reviews, %s), %d calls per row after %d warm-up calls, %d CPUs:\n\n",
		version, scale, res.Categories, res.Products, res.Reviews, state, runs, 3, runtime.NumCPU())
	out.WriteString("| query | case | median ms | p95 ms | max ms |\n|---|---|---:|---:|---:|\n")
	for _, r := range rows {
		n := runs
		switch {
		case strings.Contains(r.what, "every category"):
			n = max(runs, int(categories)) // each category at least once
		case strings.Contains(r.what, "stampede"):
			n = max(1, runs/stampedeCallers) * 2 // rounds of stampedeCallers calls
		}
		for i := range 3 {
			if err := r.call(1_000_000 + i); err != nil {
				t.Fatalf("%s warm-up: %v", r.name, err)
			}
		}
		mu.Lock()
		samples = samples[:0]
		mu.Unlock()
		for i := range n {
			if err := r.call(i); err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
		}
		mu.Lock()
		d := slices.Clone(samples)
		mu.Unlock()
		slices.Sort(d)
		fmt.Fprintf(&out, "| %s | %s | %s | %s | %s |\n", r.name, r.what,
			ms(d[len(d)/2]), ms(d[int(math.Ceil(0.95*float64(len(d))))-1]), ms(d[len(d)-1]))
	}
	fmt.Fprintf(&out, "\nHost load average (1, 5, 15 min) at the end: %s\n", loadAverage())
	t.Log("\n" + out.String())

	for _, e := range []struct {
		name string
		sql  string
		args []any
	}{
		{"category_stats, largest category", sqlCategoryStats, []any{largest}},
		{"category_stats, smallest category", sqlCategoryStats, []any{smallest}},
		{"top_products, largest category", sqlTopProducts, []any{largest, 50, float64(PriorWeight)}},
		{"top_products, smallest category", sqlTopProducts, []any{smallest, 50, float64(PriorWeight)}},
		{"search, made", sqlSearch, []any{"made", 20}},
		{"search, oak", sqlSearch, []any{"oak", 20}},
	} {
		t.Logf("EXPLAIN (ANALYZE, BUFFERS) %s:\n%s", e.name, explain(t, db, e.sql, e.args...))
	}
}

// stampedeCallers is the number of concurrent calls of the stampede row, and
// the pool size.
const stampedeCallers = 16

func explain(t testing.TB, db *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	rows, err := db.Query(context.Background(), "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// loadAverage returns the host's load averages, or "unknown" off Linux:
// other processes on the host inflate every number of the table.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }

func envFloat(t testing.TB, name string, def float64) float64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return f
}
