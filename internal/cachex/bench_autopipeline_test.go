package cachex

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// benchAPParallelism makes 32 goroutines on 2 CPUs: enough callers at once
// for an AutoPipeliner to batch.
const benchAPParallelism = 16

// BenchmarkGetJSONAutoPipelined puts a JSON hit side by side over both kinds
// of client, in one run: raw (GET + json.Unmarshal) and cachex over the plain
// client, the same over its AutoPipeliner (-ap), cachex with
// Options.AutoPipeline (-auto), and that with ReuseDecoded. Goals:
// cachex-ap and cachex-auto within 1.10x of raw-ap in
// parallel, cachex-auto within 1.10x of cachex alone, cachex-auto-reuse at
// most 0.25x raw in parallel.
func BenchmarkGetJSONAutoPipelined(b *testing.B) {
	env := newBenchEnv(b, benchKeys)
	ap, err := env.rdb.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	var calls atomic.Int64
	product := func(i int) benchProduct { return newBenchProduct(int64(i)) }
	cache := func(rdb redis.UniversalClient, auto bool, reuse int) (*Cache[benchProduct], func(context.Context) (benchProduct, error)) {
		c, _ := newCache(b, rdb, JSON[benchProduct]{}, Options{Name: "bench", TTL: benchTTL, AutoPipeline: auto, ReuseDecoded: reuse})
		return c, prefill(b, c, env.keys, product, &calls)
	}
	plain, loadPlain := cache(env.rdb, false, 0)
	viaAP, loadAP := cache(ap, false, 0)
	auto, loadAuto := cache(env.rdb, true, 0)
	reused, loadReused := cache(env.rdb, true, 2*benchKeys)

	hit := func(c *Cache[benchProduct], load func(context.Context) (benchProduct, error)) benchBody {
		return func(ctx context.Context, i int) error {
			p, err := c.Get(ctx, env.keys[i], load)
			if err == nil && p.ID != int64(i) {
				err = fmt.Errorf("cachex %s: got product %d", env.keys[i], p.ID)
			}
			return err
		}
	}
	sides := []struct {
		name string
		body benchBody
	}{
		{"raw", rawJSON(env, env.rdb)},
		{"cachex", hit(plain, loadPlain)},
		{"raw-ap", rawJSON(env, ap)},
		{"cachex-ap", hit(viaAP, loadAP)},
		{"cachex-auto", hit(auto, loadAuto)},
		{"cachex-auto-reuse", hit(reused, loadReused)},
	}
	for _, mode := range []string{"seq", "parallel"} {
		for _, side := range sides {
			b.Run(side.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				if mode == "seq" {
					runSeq(b, benchKeys, side.body)
					return
				}
				runParallelN(b, benchAPParallelism, benchKeys, side.body)
			})
		}
	}
	assertNoLoads(b, &calls, 0)
}
