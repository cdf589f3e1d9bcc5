package cachex

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

func TestNewRefusesUnusableOptions(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	for name, opts := range map[string]Options{
		"TTL below 1ms":         {Name: "a", TTL: 999 * time.Microsecond},
		"NegativeTTL below 1ms": {Name: "a", TTL: time.Second, NegativeTTL: time.Microsecond},
		"brace in Name":         {Name: "a{b", TTL: time.Second},
		"brace in Prefix":       {Name: "a", Prefix: "x}:", TTL: time.Second},
	} {
		if _, err := New(rdb, JSON[string]{}, opts); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(rdb, JSON[string]{}, Options{Name: "a", TTL: time.Millisecond, NegativeTTL: time.Millisecond}); err != nil {
		t.Errorf("1ms TTLs: %v", err)
	}
}

// GetMany asks for at most 500 keys per MGET, in one round trip.
func TestGetManySendsAtMost500KeysPerMGET(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	h := &commands{}
	rdb.AddHook(h)
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "wide", TTL: time.Minute})
	keys := make([]string, 1201)
	for i := range keys {
		keys[i] = itoa(int64(i + 1))
	}
	load := func(_ context.Context, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "v" + k
		}
		return out, nil
	}
	if got, err := c.GetMany(ctx, keys, load); err != nil || len(got) != len(keys) {
		t.Fatalf("fill: %d values, %v", len(got), err)
	}
	h.reset()
	got, err := c.GetMany(ctx, keys, load)
	if err != nil || len(got) != len(keys) || got["1201"] != "v1201" {
		t.Fatalf("read: %d values, %v", len(got), err)
	}
	if h.count("mget") != 3 || h.roundTrips() != 1 {
		t.Fatalf("%d MGETs in %d round trips for 1201 keys, want 3 in 1", h.count("mget"), h.roundTrips())
	}
	for _, n := range h.mgetKeys() {
		if n > 500 {
			t.Fatalf("an MGET asked for %d keys, want at most 500", n)
		}
	}
}

// On a cluster, a node that cannot be reached is a Redis failure (it feeds
// the breaker and is counted), even when another node's key was merely
// missing.
func TestGetManyOnAClusterReportsALaterNodesFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.RedisCluster(t, 3)
	opt := cl.Client.Options()
	// No retries and no timeouts of the client's own: the cache's Timeout
	// ends the call to the paused node. It is a second so that the healthy
	// node's answer, on a busy machine, is not cut short too (that would
	// hide the case under test behind a second failure).
	opt.ContextTimeoutEnabled, opt.MaxRetries = true, -1
	opt.ReadTimeout, opt.WriteTimeout = -1, -1
	rdb := redis.NewClusterClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "cl", TTL: time.Minute, Timeout: time.Second, BreakerFailures: 1000})
	// A key on the first node (missing) and one on the last (its node paused).
	var first, last string
	for i := 0; first == "" || last == ""; i++ {
		k := "k" + itoa(int64(i))
		s, err := rdb.ClusterKeySlot(ctx, c.redisKey(k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if s < 16384/3 && first == "" {
			first = k
		}
		if s >= 2*16384/3 && last == "" {
			last = k
		}
	}
	cl.Nodes[2].Pause()
	defer cl.Nodes[2].Resume()
	before := counterOf(c.m.redisErrs.WithLabelValues("get"))
	_, _ = c.GetMany(ctx, []string{first, last}, func(_ context.Context, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "v"
		}
		return out, nil
	})
	if counterOf(c.m.redisErrs.WithLabelValues("get")) == before {
		t.Fatal("the paused node's failure was not counted: hidden behind the first node's miss")
	}
	if gets(c, resultBypass) != 2 {
		t.Fatalf("%d keys bypassed Redis, want 2 (Redis reported down)", gets(c, resultBypass))
	}
	if n, miss := recomputes(c, reasonBypass, "ok"), recomputes(c, reasonMiss, "ok"); n != 2 || miss != 0 {
		t.Fatalf("recomputes: bypass %d, miss %d; want 2 and 0 (a bypass is labelled reason=\"bypass\")", n, miss)
	}
}

// redisErrReply is an error reply from the server (go-redis's redis.Error).
type redisErrReply string

func (e redisErrReply) Error() string { return string(e) }
func (redisErrReply) RedisError()     {}

// A lock script that fails in a batch refresh is a Redis error, not
// contention.
func TestBatchRefreshCountsALockErrorAsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, redistest.Redis(t))
	clk := newClock()
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "lockerr", TTL: time.Hour, now: clk.Now, noClockSync: true})
	load := func(_ context.Context, keys []string) (map[string]string, error) {
		time.Sleep(time.Millisecond) // delta > 0: early refresh can happen
		return map[string]string{keys[0]: "v"}, nil
	}
	if _, err := c.GetMany(ctx, []string{"a"}, load); err != nil {
		t.Fatal(err)
	}
	rdb.AddHook(failLocks{})
	clk.Add(time.Hour - time.Millisecond)
	mustSetBeta(t, c, 1e9) // refresh early, for any delta above 0
	if _, err := c.GetMany(ctx, []string{"a"}, load); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed lock to be counted", func() bool {
		return counterOf(c.m.redisErrs.WithLabelValues("lock")) == 1
	})
	if n := counterOf(c.m.contended); n != 0 {
		t.Fatalf("cachex_refresh_lock_contended_total = %v, want 0: a failed lock is not contention", n)
	}
}

// failLocks makes every lock script fail with an error reply, alone or in a
// pipeline, as a Redis error would.
type failLocks struct{}

// isLock reports whether cmd runs lockSrc (by SHA or by source).
func isLock(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) > 1 && (args[1] == lockSrc || args[1] == redis.NewScript(lockSrc).Hash())
}

func (failLocks) DialHook(next redis.DialHook) redis.DialHook { return next }
func (failLocks) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isLock(cmd) {
			cmd.SetErr(redisErrReply("ERR injected lock failure"))
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (failLocks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if isLock(cmd) {
				cmd.SetErr(redisErrReply("ERR injected lock failure"))
				err = errors.Join(err, cmd.Err())
			}
		}
		return err
	}
}
