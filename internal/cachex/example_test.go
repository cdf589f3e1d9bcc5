package cachex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/redistest"
)

// exampleRedis connects to the private server the tests start for the
// Examples; in a service, the client of your Redis, with
// ContextTimeoutEnabled (New refuses a client without).
func exampleRedis() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: os.Getenv(redistest.ExampleAddrEnv), ContextTimeoutEnabled: true})
}

type CategoryStats struct {
	Products int     `json:"products"`
	AvgPrice float64 `json:"avg_price"`
}

func Example() {
	rdb := exampleRedis()
	defer rdb.Close()
	reg := prometheus.NewRegistry()

	stats, err := cachex.New(rdb, cachex.JSON[CategoryStats]{}, cachex.Options{
		Name:       "example_category_stats",
		TTL:        30 * time.Second,
		Registerer: reg,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer stats.Close()
	ctx := context.Background()
	_ = stats.Invalidate(ctx, "garden") // start from nothing

	expensiveQuery := func(ctx context.Context) (CategoryStats, error) {
		return CategoryStats{Products: 412, AvgPrice: 23.5}, nil // a slow aggregate in real life
	}
	s, err := stats.Get(ctx, "garden", expensiveQuery)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Products, s.AvgPrice)
	// Output: 412 23.5
}

func ExampleCache_GetMany() {
	rdb := exampleRedis()
	defer rdb.Close()
	names, err := cachex.New(rdb, cachex.JSON[string]{}, cachex.Options{Name: "example_product_name", TTL: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	defer names.Close()
	ctx := context.Background()
	_ = names.Invalidate(ctx, "1", "2", "3")

	// One loader call for all the keys that are not cached; a key it leaves
	// out does not exist.
	byIDs := func(ctx context.Context, ids []string) (map[string]string, error) {
		found := map[string]string{}
		for _, id := range ids {
			if id != "3" {
				found[id] = "product " + id
			}
		}
		return found, nil
	}
	got, err := names.GetMany(ctx, []string{"1", "2", "3"}, byIDs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(got), got["1"], got["2"])
	// Output: 2 product 1 product 2
}

func ExampleErrNotFound() {
	rdb := exampleRedis()
	defer rdb.Close()
	products, err := cachex.New(rdb, cachex.JSON[string]{}, cachex.Options{
		Name: "example_product", TTL: time.Minute, NegativeTTL: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer products.Close()
	ctx := context.Background()
	_ = products.Invalidate(ctx, "404")

	errNoSuchProduct := errors.New("no such product")
	load := func(ctx context.Context) (string, error) {
		// Wrap both: the cache recognises ErrNotFound, callers their own error.
		return "", fmt.Errorf("%w: %w", cachex.ErrNotFound, errNoSuchProduct)
	}
	_, err = products.Get(ctx, "404", load)
	fmt.Println(errors.Is(err, cachex.ErrNotFound), errors.Is(err, errNoSuchProduct))
	_, err = products.Get(ctx, "404", load) // served from the cached answer
	fmt.Println(errors.Is(err, cachex.ErrNotFound))
	// Output:
	// true true
	// true
}

func ExampleCache_SetStrategy() {
	rdb := exampleRedis()
	defer rdb.Close()
	c, err := cachex.New(rdb, cachex.Raw{}, cachex.Options{Name: "example_page", TTL: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Show the stampede: switch to the plain read-through baseline...
	if err := c.SetStrategy(cachex.TTL); err != nil {
		log.Fatal(err)
	}
	// ...and back. An unknown name is refused.
	fmt.Println(c.SetStrategy(cachex.XFetch), c.SetStrategy("lru") != nil, c.Strategy())
	// Output: <nil> true xfetch
}

// A cache for many concurrent readers: calls that overlap share round trips
// through the client's AutoPipeliner, and a hit on an unchanged entry
// returns the value decoded before (callers must not modify it).
func ExampleOptions_autoPipeline() {
	rdb := exampleRedis()
	defer rdb.Close()
	stats, err := cachex.New(rdb, cachex.JSON[CategoryStats]{}, cachex.Options{
		Name:         "example_hot_stats",
		TTL:          30 * time.Second,
		AutoPipeline: true,
		ReuseDecoded: 1024, // about twice the hot keys
	})
	if err != nil {
		log.Fatal(err)
	}
	defer stats.Close()
	ctx := context.Background()
	_ = stats.Invalidate(ctx, "garden")

	query := func(ctx context.Context) (CategoryStats, error) {
		return CategoryStats{Products: 412, AvgPrice: 23.5}, nil
	}
	first, _ := stats.Get(ctx, "garden", query)  // a miss: computed and written
	second, _ := stats.Get(ctx, "garden", query) // a hit: decoded, kept for reuse
	third, _ := stats.Get(ctx, "garden", query)  // a hit on the same entry: reused
	fmt.Println(first == second, second == third)
	// Output: true true
}

// Example_copyIt is the example of the "Copy it" section of
// the stampede repository's docs/cachex.md: an expensive
// query read through the cache.
func Example_copyIt() {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  os.Getenv(redistest.ExampleAddrEnv), // your Redis
		ContextTimeoutEnabled: true,                                // required: every call ends at Timeout
	})
	defer rdb.Close()

	type Stats struct{ Products int }
	stats, err := cachex.New(rdb, cachex.JSON[Stats]{}, cachex.Options{
		Name:       "category_stats", // a metric label: keep it low-cardinality
		TTL:        time.Minute,
		Registerer: prometheus.NewRegistry(), // your registry
	})
	if err != nil {
		log.Fatal(err)
	}
	defer stats.Close()

	query := func(ctx context.Context) (Stats, error) {
		return Stats{Products: 412}, nil // the expensive query: one caller per key runs it
	}
	s, err := stats.Get(context.Background(), "garden", query)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Products)
	// Output: 412
}

// A near cache: the client keeps GET replies in process memory (go-redis
// client-side caching, RESP3) and Redis tells it when a key changes, so hot
// keys are served without a round trip. MaxStaleness bounds how long a lost
// invalidation could serve an old value.
func Example_nearCache() {
	rdb := redis.NewClient(&redis.Options{
		Addr: os.Getenv(redistest.ExampleAddrEnv), ContextTimeoutEnabled: true, Protocol: 3,
		ClientSideCacheConfig: &redis.ClientSideCacheConfig{MaxEntries: 10_000, MaxStaleness: 2 * time.Second},
	})
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cachex.NearCacheCollector(rdb, "hot"))

	stats, err := cachex.New(rdb, cachex.JSON[CategoryStats]{}, cachex.Options{
		Name: "example_near_stats", TTL: 30 * time.Second, Registerer: reg, ReuseDecoded: 1024,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer stats.Close()
	ctx := context.Background()
	_ = stats.Invalidate(ctx, "garden")

	load := func(ctx context.Context) (CategoryStats, error) {
		return CategoryStats{Products: 412, AvgPrice: 23.5}, nil
	}
	for range 3 { // the first read loads; once the client holds the reply, reads come from memory
		s, err := stats.Get(ctx, "garden", load)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(s.Products)
	}
	// Output:
	// 412
	// 412
	// 412
}
