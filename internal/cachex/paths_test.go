package cachex

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// pathOutcome is what three reads of one key did: the answers, the loader
// calls, the writes refused, and what Redis holds after.
type pathOutcome struct {
	answers  []string // the value, or "not found"
	loads    int
	discards int
	after    string // "string:<value>", "string:not found", "string:undecodable", or the key's type
}

// TestGetAndGetManyAgreeOnEveryReplyKind reads a key that holds each kind of
// reply three times, once with Get and once with GetMany (with a fresh key
// beside it), and wants the same loader calls, writes and answers.
func TestGetAndGetManyAgreeOnEveryReplyKind(t *testing.T) {
	t.Parallel()
	agreeOnEveryReplyKind(t, client(t, redistest.Redis(t)))
}

// TestGetAndGetManyAgreeOnEveryReplyKindOnACluster is the same on a cluster,
// where GetMany sends a GET per key and gets WRONGTYPE for a foreign type.
func TestGetAndGetManyAgreeOnEveryReplyKindOnACluster(t *testing.T) {
	t.Parallel()
	cl := redistest.RedisCluster(t, 3)
	opt := cl.Client.Options()
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClusterClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	agreeOnEveryReplyKind(t, rdb)
}

func agreeOnEveryReplyKind(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	clk := newClock()
	now := clk.Now()
	opts := Options{Name: "paths", TTL: time.Hour, NegativeTTL: time.Hour, LeaseWait: 100 * time.Millisecond,
		now: clk.Now, noClockSync: true, rand: func() float64 { return 0 }} // u = 1: never early
	envelope := func(e entry, payload string) []byte {
		e.payload = []byte(payload)
		return encodeEntry(nil, e)
	}
	fresh := envelope(entry{computedAt: now.Add(-time.Second), expiry: now.Add(time.Hour), delta: time.Millisecond}, `"seed"`)
	expired := envelope(entry{computedAt: now.Add(-2 * time.Hour), expiry: now.Add(-time.Minute), delta: time.Millisecond}, `"seed"`)
	set := func(b []byte) func(string) error {
		return func(rk string) error { return rdb.Set(ctx, rk, b, time.Hour).Err() }
	}
	loaded, seed, notFound := "L", "seed", "not found"
	for _, tc := range []struct {
		name  string
		seed  func(rk string) error
		loads int
		want  string // answer of all three reads
		after string
	}{
		{"absent", func(string) error { return nil }, 1, loaded, "string:" + loaded},
		{"fresh value", set(fresh), 0, seed, "string:" + seed},
		{"negative entry", set(envelope(entry{computedAt: now, expiry: now.Add(time.Hour), negative: true}, "")), 0, notFound, "string:" + notFound},
		{"expired value", set(expired), 1, loaded, "string:" + loaded},
		{"tombstone", set(tombstone(now)), 1, loaded, "string:" + loaded},
		{"corrupt envelope", set(append(fresh[:envHeaderSize:envHeaderSize], '{')), 1, loaded, "string:" + loaded},
		{"foreign string", set([]byte("hello")), 1, loaded, "string:" + loaded},
		{"foreign type", func(rk string) error { return rdb.RPush(ctx, rk, "x").Err() }, 1, loaded, "string:" + loaded},
		{"lease held, absent", func(rk string) error { return rdb.Set(ctx, lockKey(rk), "other", time.Hour).Err() }, 1, loaded, "string:" + loaded},
		{"lease held, expired", func(rk string) error {
			if err := set(expired)(rk); err != nil {
				return err
			}
			return rdb.Set(ctx, lockKey(rk), "other", time.Hour).Err()
		}, 0, seed, "string:" + seed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := pathOutcome{answers: []string{tc.want, tc.want, tc.want}, loads: tc.loads, after: tc.after}
			for _, path := range []string{"Get", "GetMany"} {
				c, _ := newCache(t, rdb, JSON[string]{}, opts)
				key := tc.name + "/" + path
				if err := tc.seed(c.redisKey(key)); err != nil {
					t.Fatal(err)
				}
				got := readThrice(t, c, rdb, path, key, set(fresh))
				if !slices.Equal(got.answers, want.answers) || got.loads != want.loads || got.discards != want.discards || got.after != want.after {
					t.Errorf("%s: %+v, want %+v", path, got, want)
				}
			}
		})
	}
}

// readThrice reads key three times with Get or with GetMany (beside a key
// that seedOther makes fresh) and reports what happened.
func readThrice(t *testing.T, c *Cache[string], rdb redis.UniversalClient, path, key string, seedOther func(string) error) pathOutcome {
	t.Helper()
	ctx := context.Background()
	var loads atomic.Int64
	var out pathOutcome
	other := key + "/other"
	if err := seedOther(c.redisKey(other)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		switch path {
		case "Get":
			v, err := c.Get(ctx, key, func(context.Context) (string, error) { loads.Add(1); return "L", nil })
			out.answers = append(out.answers, answer(t, v, err))
		case "GetMany":
			m, err := c.GetMany(ctx, []string{key, other}, func(_ context.Context, keys []string) (map[string]string, error) {
				if slices.Contains(keys, key) {
					loads.Add(1)
				}
				return map[string]string{key: "L", other: "L"}, nil
			})
			v, ok := m[key]
			if !ok && err == nil {
				err = ErrNotFound
			}
			out.answers = append(out.answers, answer(t, v, err))
		}
	}
	out.loads, out.discards = int(loads.Load()), discards(c)
	out.after = stored(t, c, rdb, c.redisKey(key))
	return out
}

func answer(t *testing.T, v string, err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "not found"
	case err != nil:
		t.Fatal(err)
	}
	return v
}

// stored describes what Redis holds at rk.
func stored(t *testing.T, c *Cache[string], rdb redis.UniversalClient, rk string) string {
	ctx := context.Background()
	kind, err := rdb.Type(ctx, rk).Result()
	if err != nil {
		t.Fatal(err)
	}
	if kind != "string" {
		return kind
	}
	raw, err := rdb.Get(ctx, rk).Result()
	if err != nil {
		t.Fatal(err)
	}
	e, err := decodeEntry([]byte(raw))
	if err != nil || e.tombstone {
		return "string:undecodable"
	}
	v, err := c.decode(e)
	return "string:" + answer(t, v, err)
}
