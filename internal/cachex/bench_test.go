package cachex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The benchmarks put cachex side by side with plain go-redis calls that fetch
// the same bytes from the same Redis through the same client, so the ratio
// between two sub-benchmarks is what cachex costs on top of Redis. Every read
// is a hit: the entries are written before the timer starts with a TTL of an
// hour, so XFetch never decides to refresh early, and each benchmark fails if
// a loader ran while it was timed. The stampede repository's `make bench`
// runs them; the stampede repository's docs/benchmarks.md holds the
// figures and the goals.

const (
	// benchKeys is how many keys a Get benchmark reads: in turn when
	// sequential, at random per goroutine when parallel, so that goroutines
	// seldom read the same key at the same moment (no lockstep).
	benchKeys = 256
	// benchBatch is how many keys one GetMany reads.
	benchBatch = 100
	// benchParallelism multiplies GOMAXPROCS into the number of goroutines
	// of a RunParallel benchmark: a read mostly waits for Redis, so a server
	// has more requests in flight than it has cores.
	benchParallelism = 4
	// benchTTL is long enough that no read during a run is an early refresh.
	benchTTL = time.Hour
)

// benchProduct is a realistic cached document: a product page's data, about
// 1 KiB of JSON.
type benchProduct struct {
	ID          int64             `json:"id"`
	SKU         string            `json:"sku"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Category    string            `json:"category"`
	Brand       string            `json:"brand"`
	PriceCents  int64             `json:"price_cents"`
	Currency    string            `json:"currency"`
	Stock       int               `json:"stock"`
	Rating      float64           `json:"rating"`
	Reviews     int               `json:"reviews"`
	Tags        []string          `json:"tags"`
	Attributes  map[string]string `json:"attributes"`
	Images      []string          `json:"images"`
	Active      bool              `json:"active"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// newBenchProduct returns the product with the given id.
func newBenchProduct(id int64) benchProduct {
	return benchProduct{
		ID:   id,
		SKU:  fmt.Sprintf("SKU-%08d", id),
		Name: "Trailblazer 2 Ultralight Hiking Backpack, 38 L",
		Description: "A 38-litre pack for long days and light overnights: a ventilated mesh back panel, " +
			"a load-lifting hip belt with two zip pockets, a hydration sleeve, side compression straps " +
			"and a stretch front pocket for a wet shell. The roll-top closure keeps rain out; the " +
			"ripstop nylon body is recycled and PFC-free. Weight 980 g; fits torsos from 40 to 52 cm.",
		Category:   "outdoor/backpacks",
		Brand:      "Northfield",
		PriceCents: 12999,
		Currency:   "EUR",
		Stock:      42,
		Rating:     4.6,
		Reviews:    1287,
		Tags:       []string{"hiking", "backpack", "ultralight", "recycled", "roll-top"},
		Attributes: map[string]string{
			"color": "slate", "volume": "38 L", "weight": "980 g", "material": "recycled ripstop nylon",
			"warranty": "5 years",
		},
		Images: []string{
			"https://img.example.com/p/" + strconv.FormatInt(id, 10) + "/front.jpg",
			"https://img.example.com/p/" + strconv.FormatInt(id, 10) + "/back.jpg",
			"https://img.example.com/p/" + strconv.FormatInt(id, 10) + "/side.jpg",
		},
		Active:    true,
		UpdatedAt: time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
	}
}

// benchEnv is one private Redis with both forms of every entry written: the
// plain payload under rawKeys for go-redis, and cachex's envelope under keys.
type benchEnv struct {
	rdb     *redis.Client // read/write timeouts of 100ms (cachex's Timeout), default pool: shared by raw and cachex
	keys    []string      // cachex keys
	rawKeys []string      // plain keys holding the same payload bytes
	payload [][]byte      // JSON of product i
}

func newBenchEnv(b *testing.B, n int) *benchEnv {
	b.Helper()
	opt := redistest.Redis(b).Options()
	opt.ContextTimeoutEnabled = true
	env := &benchEnv{rdb: redis.NewClient(opt)}
	b.Cleanup(func() { _ = env.rdb.Close() })
	ctx := context.Background()
	for i := range n {
		p, err := json.Marshal(newBenchProduct(int64(i)))
		if err != nil {
			b.Fatal(err)
		}
		env.keys = append(env.keys, "p"+strconv.Itoa(i))
		env.rawKeys = append(env.rawKeys, "raw:p"+strconv.Itoa(i))
		env.payload = append(env.payload, p)
		if err := env.rdb.Set(ctx, env.rawKeys[i], p, benchTTL).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return env
}

// index returns the position of key in env.keys.
func (env *benchEnv) index(key string) int {
	i, err := strconv.Atoi(key[1:])
	if err != nil {
		panic(err)
	}
	return i
}

// benchCache returns a cache with the given codec, metrics registered, over
// env's client.
func benchCache[V any](b *testing.B, env *benchEnv, codec Codec[V]) *Cache[V] {
	b.Helper()
	c, _ := newCache(b, env.rdb, codec, Options{Name: "bench", TTL: benchTTL})
	return c
}

// prefill reads every key once through c, loading value(i) for the i-th,
// so that each is cached. It returns the loader that the timed loops pass:
// it only counts its calls (and fails), since no timed read should miss.
func prefill[V any](b *testing.B, c *Cache[V], keys []string, value func(i int) V, calls *atomic.Int64) func(context.Context) (V, error) {
	b.Helper()
	for i, k := range keys {
		if _, err := c.Get(context.Background(), k, func(context.Context) (V, error) {
			return value(i), nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return func(context.Context) (V, error) {
		calls.Add(1)
		var zero V
		return zero, errors.New("bench: a timed read missed")
	}
}

// assertNoLoads fails the benchmark if the loader ran after prefill.
func assertNoLoads(b *testing.B, calls *atomic.Int64, before int64) {
	b.Helper()
	if n := calls.Load() - before; n != 0 {
		b.Fatalf("the loader ran %d times while timed: not every read was a hit", n)
	}
}

// benchBody reads the i-th of the benchmark's keys. It returns an error instead of
// failing, as RunParallel's goroutines may not call Fatal.
type benchBody func(ctx context.Context, i int) error

// runPair runs raw/seq, cachex/seq, raw/parallel and cachex/parallel in that
// order, so that the two sides of each comparison run back to back and drift
// of the machine's load hits both alike.
func runPair(b *testing.B, nkeys int, raw, cachex benchBody) {
	for _, mode := range []string{"seq", "parallel"} {
		for _, side := range []struct {
			name string
			body benchBody
		}{{"raw", raw}, {"cachex", cachex}} {
			b.Run(side.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "seq" {
					runSeq(b, nkeys, side.body)
				} else {
					runParallel(b, nkeys, side.body)
				}
			})
		}
	}
}

func runSeq(b *testing.B, nkeys int, body benchBody) {
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if err := body(ctx, i%nkeys); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func runParallel(b *testing.B, nkeys int, body benchBody) {
	runParallelN(b, benchParallelism, nkeys, body)
}

// runParallelN runs body on parallelism × GOMAXPROCS goroutines.
func runParallelN(b *testing.B, parallelism, nkeys int, body benchBody) {
	b.SetParallelism(parallelism)
	var seed atomic.Uint64
	var failed atomic.Pointer[error]
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		r := rand.New(rand.NewPCG(seed.Add(1), 0))
		for pb.Next() {
			if err := body(ctx, r.IntN(nkeys)); err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
		}
	})
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}

// BenchmarkGet compares a cache hit with the Raw codec to a go-redis GET of
// the same bytes. Goal: cachex within 1.05x of raw.
func BenchmarkGet(b *testing.B) {
	env := newBenchEnv(b, benchKeys)
	c := benchCache[[]byte](b, env, Raw{})
	var calls atomic.Int64
	load := prefill(b, c, env.keys, func(i int) []byte { return env.payload[i] }, &calls)

	runPair(b, benchKeys, func(ctx context.Context, i int) error {
		v, err := env.rdb.Get(ctx, env.rawKeys[i]).Bytes()
		if err == nil && len(v) != len(env.payload[i]) {
			err = fmt.Errorf("raw %s: got %d bytes, want %d", env.rawKeys[i], len(v), len(env.payload[i]))
		}
		return err
	}, func(ctx context.Context, i int) error {
		v, err := c.Get(ctx, env.keys[i], load)
		if err == nil && len(v) != len(env.payload[i]) {
			err = fmt.Errorf("cachex %s: got %d bytes, want %d", env.keys[i], len(v), len(env.payload[i]))
		}
		return err
	})
	assertNoLoads(b, &calls, 0)
}

// BenchmarkGetJSON compares a typed cache hit (JSON codec) to a go-redis GET
// followed by json.Unmarshal of the same document. Goal: within 1.05x.
func BenchmarkGetJSON(b *testing.B) {
	env := newBenchEnv(b, benchKeys)
	c := benchCache[benchProduct](b, env, JSON[benchProduct]{})
	var calls atomic.Int64
	load := prefill(b, c, env.keys, func(i int) benchProduct { return newBenchProduct(int64(i)) }, &calls)

	runPair(b, benchKeys, rawJSON(env, env.rdb), func(ctx context.Context, i int) error {
		p, err := c.Get(ctx, env.keys[i], load)
		if err == nil && p.ID != int64(i) {
			err = fmt.Errorf("cachex %s: got product %d", env.keys[i], p.ID)
		}
		return err
	})
	assertNoLoads(b, &calls, 0)
}

// rawJSON reads product i with a GET through rdb and json.Unmarshal: the
// floor a typed cache hit is compared with.
func rawJSON(env *benchEnv, rdb redis.Cmdable) benchBody {
	return func(ctx context.Context, i int) error {
		data, err := rdb.Get(ctx, env.rawKeys[i]).Bytes()
		if err != nil {
			return err
		}
		var p benchProduct
		if err := json.Unmarshal(data, &p); err != nil {
			return err
		}
		if p.ID != int64(i) {
			return fmt.Errorf("raw %s: got product %d", env.rawKeys[i], p.ID)
		}
		return nil
	}
}

// BenchmarkGetMany reads 100 keys: one MGET, one cachex GetMany (Raw codec),
// and 100 GETs one after the other. Goals: cachex within 1.3x of MGET and at
// least 8x faster than the sequential GETs.
func BenchmarkGetMany(b *testing.B) {
	env := newBenchEnv(b, benchBatch)
	c := benchCache[[]byte](b, env, Raw{})
	var calls atomic.Int64
	load := func(ctx context.Context, keys []string) (map[string][]byte, error) {
		calls.Add(int64(len(keys)))
		out := make(map[string][]byte, len(keys))
		for _, k := range keys {
			out[k] = env.payload[env.index(k)]
		}
		return out, nil
	}
	ctx := context.Background()
	if _, err := c.GetMany(ctx, env.keys, load); err != nil {
		b.Fatal(err)
	}
	if got := calls.Load(); got != benchBatch {
		b.Fatalf("prefill: loader ran for %d keys, want %d", got, benchBatch)
	}
	before := calls.Load()

	b.Run("mget", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			vals, err := env.rdb.MGet(ctx, env.rawKeys...).Result()
			if err != nil {
				b.Fatal(err)
			}
			for i, v := range vals {
				if s, ok := v.(string); !ok || len(s) != len(env.payload[i]) {
					b.Fatalf("mget %s: got %T", env.rawKeys[i], v)
				}
			}
		}
	})
	b.Run("cachex", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			vals, err := c.GetMany(ctx, env.keys, load)
			if err != nil {
				b.Fatal(err)
			}
			if len(vals) != benchBatch {
				b.Fatalf("cachex: got %d values, want %d", len(vals), benchBatch)
			}
		}
	})
	b.Run("sequential-gets", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, k := range env.rawKeys {
				v, err := env.rdb.Get(ctx, k).Bytes()
				if err != nil {
					b.Fatal(err)
				}
				if len(v) != len(env.payload[i]) {
					b.Fatalf("get %s: got %d bytes", k, len(v))
				}
			}
		}
	})
	assertNoLoads(b, &calls, before)
}
