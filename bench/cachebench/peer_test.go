package cachebench

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

	gocache "github.com/go-redis/cache/v9"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/stampede-lab/stampede/internal/cachex"
	"github.com/stampede-lab/stampede/internal/testenv"
)

const (
	// keys is how many keys a benchmark reads: in turn when sequential, at
	// random per goroutine when parallel, as in internal/cachex's benchmarks.
	// Goroutines seldom read the same key at once, so go-redis/cache's Once
	// seldom coalesces two hits into one GET (it does under hot keys).
	keys = 256
	// parallelism multiplies GOMAXPROCS into RunParallel's goroutines: 32
	// on 2 CPUs, enough callers at once for auto-pipelining to batch.
	parallelism = 16
	// ttl is long enough that no timed read is a miss or an early refresh.
	ttl = time.Hour
	// nearTimeout is the near sides' Options.Timeout. Their hits never wait
	// for I/O, so 32 goroutines on 2 CPUs are all runnable at once and one
	// can wait many 10 ms time slices to run again; a call whose 100 ms
	// deadline passed meanwhile fails as a Redis timeout, and the read is a
	// bypass. A second leaves only the cost of the hit to measure.
	nearTimeout = time.Second
)

// product is the cached document: the same ~1 KiB product as in
// internal/cachex's benchmarks.
type product struct {
	ID          int64             `json:"id" msgpack:"id"`
	SKU         string            `json:"sku" msgpack:"sku"`
	Name        string            `json:"name" msgpack:"name"`
	Description string            `json:"description" msgpack:"description"`
	Category    string            `json:"category" msgpack:"category"`
	Brand       string            `json:"brand" msgpack:"brand"`
	PriceCents  int64             `json:"price_cents" msgpack:"price_cents"`
	Currency    string            `json:"currency" msgpack:"currency"`
	Stock       int               `json:"stock" msgpack:"stock"`
	Rating      float64           `json:"rating" msgpack:"rating"`
	Reviews     int               `json:"reviews" msgpack:"reviews"`
	Tags        []string          `json:"tags" msgpack:"tags"`
	Attributes  map[string]string `json:"attributes" msgpack:"attributes"`
	Images      []string          `json:"images" msgpack:"images"`
	Active      bool              `json:"active" msgpack:"active"`
	UpdatedAt   time.Time         `json:"updated_at" msgpack:"updated_at"`
}

func newProduct(id int64) product {
	sid := strconv.FormatInt(id, 10)
	return product{
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
			"https://img.example.com/p/" + sid + "/front.jpg",
			"https://img.example.com/p/" + sid + "/back.jpg",
			"https://img.example.com/p/" + sid + "/side.jpg",
		},
		Active:    true,
		UpdatedAt: time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
	}
}

// body reads product i of the rotation; it returns an error rather than
// failing, as RunParallel's goroutines may not call Fatal.
type body func(ctx context.Context, i int) (product, error)

// BenchmarkPeerGet reads a cached product, typed, on one Redis and one
// go-redis client (ContextTimeoutEnabled, go-redis's default pool) and its
// AutoPipeliner, and on rueidis's own client:
//
//   - raw: GET and json.Unmarshal, the floor;
//   - raw-ap: the same through the client's AutoPipeliner;
//   - cachex: Cache[product] with the JSON codec (its default);
//   - cachex-ap: the same over the AutoPipeliner;
//   - cachex-auto: cachex with Options.AutoPipeline over the client;
//   - cachex-auto-reuse: the same with ReuseDecoded;
//   - cachex-near: cachex over a second client with go-redis's client-side
//     caching (the near cache: a hit from process memory, invalidated by
//     the server), decoding each hit;
//   - cachex-near-reuse: the same with ReuseDecoded, as the API runs it;
//   - rueidis: rueidis's GET (every connection pipelined) and
//     json.Unmarshal;
//   - rueidis-csc: rueidis's DoCache, served from its client-side cache
//     (the server tracks the key and invalidates it), and json.Unmarshal;
//   - goredis-cache: go-redis/cache's Once with its defaults, msgpack and s2
//     compression, no local cache — as its README shows it;
//   - goredis-cache-json: the same with encoding/json as Marshal and
//     Unmarshal, to separate the codec from the library.
//
// Every read is a hit; the benchmark fails if a loader ran while timed.
func BenchmarkPeerGet(b *testing.B) {
	node := testenv.Redis(b)
	opt := node.Options()
	opt.ContextTimeoutEnabled = true // cachex requires it; every side gets it
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()

	ap, err := rdb.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	nopt := node.Options()
	nopt.ContextTimeoutEnabled, nopt.Protocol = true, 3
	nopt.ClientSideCacheConfig = &redis.ClientSideCacheConfig{MaxEntries: 4 * keys, MaxStaleness: time.Minute}
	near := redis.NewClient(nopt)
	b.Cleanup(func() { _ = near.Close() })
	var calls atomic.Int64 // loader calls after prefill
	sides := []struct {
		name string
		read body
	}{
		{"raw", rawSide(b, rdb)},
		{"raw-ap", rawSide(b, ap)},
		{"cachex", cachexSide(b, rdb, false, 0, 0, &calls)},
		{"cachex-ap", cachexSide(b, ap, false, 0, 0, &calls)},
		{"cachex-auto", cachexSide(b, rdb, true, 0, 0, &calls)},
		{"cachex-auto-reuse", cachexSide(b, rdb, true, 2*keys, 0, &calls)},
		{"cachex-near", cachexSide(b, near, false, 0, nearTimeout, &calls)},
		{"cachex-near-reuse", cachexSide(b, near, false, 2*keys, nearTimeout, &calls)},
		{"rueidis", rueidisSide(b, node.Addr(), false)},
		{"rueidis-csc", rueidisSide(b, node.Addr(), true)},
		{"goredis-cache", goredisCacheSide(b, rdb, "gc:", nil, &calls)},
		{"goredis-cache-json", goredisCacheSide(b, rdb, "gcj:", &gocache.Options{
			Marshal:   json.Marshal,
			Unmarshal: json.Unmarshal,
		}, &calls)},
	}
	for _, mode := range []string{"seq", "parallel"} {
		for _, s := range sides {
			b.Run(s.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "seq" {
					for i := 0; b.Loop(); i++ {
						if err := check(s.read(ctx, i%keys)); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(parallelism)
				var seed atomic.Uint64
				var failed atomic.Pointer[error]
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(seed.Add(1), 0))
					for pb.Next() {
						if err := check(s.read(ctx, r.IntN(keys))); err != nil {
							failed.CompareAndSwap(nil, &err)
							return
						}
					}
				})
				if err := failed.Load(); err != nil {
					b.Fatal(*err)
				}
			})
		}
	}
	if n := calls.Load(); n != 0 {
		b.Fatalf("a loader ran %d times while timed: not every read was a hit", n)
	}
}

// check verifies a read's result cheaply.
func check(p product, err error) error {
	if err == nil && (p.SKU == "" || len(p.Images) != 3) {
		err = fmt.Errorf("product %d read back incomplete", p.ID)
	}
	return err
}

// rawSide stores each product's JSON under a plain key and reads it with
// GET and json.Unmarshal.
func rawSide(b *testing.B, rdb redis.UniversalClient) body {
	rawKeys := make([]string, keys)
	for i := range keys {
		data, err := json.Marshal(newProduct(int64(i)))
		if err != nil {
			b.Fatal(err)
		}
		rawKeys[i] = "raw:p" + strconv.Itoa(i)
		if err := rdb.Set(context.Background(), rawKeys[i], data, ttl).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return func(ctx context.Context, i int) (product, error) {
		data, err := rdb.Get(ctx, rawKeys[i]).Bytes()
		if err != nil {
			return product{}, err
		}
		var p product
		err = json.Unmarshal(data, &p)
		return p, err
	}
}

// errMissed is what a timed read's loader returns: every timed read must hit.
var errMissed = errors.New("cachebench: a timed read missed")

// cachexSide fills a cachex cache through its loader and reads with Get.
//
// timeout is Options.Timeout, 0 for its default.
func cachexSide(b *testing.B, rdb redis.UniversalClient, auto bool, reuse int, timeout time.Duration, calls *atomic.Int64) body {
	c, err := cachex.New(rdb, cachex.JSON[product]{}, cachex.Options{
		Name:         "peer",
		TTL:          ttl,
		Registerer:   prometheus.NewRegistry(),
		AutoPipeline: auto,
		ReuseDecoded: reuse,
		Timeout:      timeout,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	ks := make([]string, keys)
	for i := range keys {
		ks[i] = "p" + strconv.Itoa(i)
		if _, err := c.Get(context.Background(), ks[i], func(context.Context) (product, error) {
			return newProduct(int64(i)), nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	load := func(context.Context) (product, error) {
		calls.Add(1)
		return product{}, errMissed
	}
	return func(ctx context.Context, i int) (product, error) {
		return c.Get(ctx, ks[i], load)
	}
}

// goredisCacheSide fills a go-redis/cache through Once and reads with Once,
// its read-through call. base, when set, supplies the codec.
func goredisCacheSide(b *testing.B, rdb *redis.Client, prefix string, base *gocache.Options, calls *atomic.Int64) body {
	opt := &gocache.Options{Redis: rdb}
	if base != nil {
		opt.Marshal, opt.Unmarshal = base.Marshal, base.Unmarshal
	}
	c := gocache.New(opt)
	ks := make([]string, keys)
	for i := range keys {
		ks[i] = prefix + "p" + strconv.Itoa(i)
		var p product
		if err := c.Once(&gocache.Item{
			Key: ks[i], Value: &p, TTL: ttl,
			Do: func(*gocache.Item) (any, error) { return newProduct(int64(i)), nil },
		}); err != nil {
			b.Fatal(err)
		}
	}
	load := func(*gocache.Item) (any, error) {
		calls.Add(1)
		return nil, errMissed
	}
	return func(ctx context.Context, i int) (product, error) {
		var p product
		err := c.Once(&gocache.Item{Ctx: ctx, Key: ks[i], Value: &p, TTL: ttl, Do: load})
		return p, err
	}
}

// rueidisSide stores each product's JSON under a plain key and reads it with
// rueidis: GET, or with csc its client-side cached GET (DoCache), then
// json.Unmarshal.
func rueidisSide(b *testing.B, addr string, csc bool) body {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: !csc})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	ctx := context.Background()
	rawKeys := make([]string, keys)
	for i := range keys {
		data, err := json.Marshal(newProduct(int64(i)))
		if err != nil {
			b.Fatal(err)
		}
		rawKeys[i] = "rueidis:p" + strconv.Itoa(i)
		if err := c.Do(ctx, c.B().Set().Key(rawKeys[i]).Value(rueidis.BinaryString(data)).Ex(ttl).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
	return func(ctx context.Context, i int) (product, error) {
		var res rueidis.RedisResult
		if csc {
			res = c.DoCache(ctx, c.B().Get().Key(rawKeys[i]).Cache(), ttl)
		} else {
			res = c.Do(ctx, c.B().Get().Key(rawKeys[i]).Build())
		}
		data, err := res.AsBytes()
		if err != nil {
			return product{}, err
		}
		var p product
		err = json.Unmarshal(data, &p)
		return p, err
	}
}
