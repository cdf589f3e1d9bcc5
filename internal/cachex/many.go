package cachex

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// GetMany returns the values of keys in one round trip per Redis node (MGET
// on a single server, pipelined GETs on a cluster), deciding XFetch per key
// like Get; early refreshes run in the background as one batch. Keys
// without a fresh value are computed by ONE call of load, deduplicated
// against recomputes in flight in this process, and written back in one
// pipeline. A key load leaves out does not exist (absent from the result,
// cached with NegativeTTL). If load fails, expired values within Grace are
// served, with the loader's error. Batch misses are not leased across
// instances: a batch that waited for another instance would wait for its
// slowest key.
func (c *Cache[V]) GetMany(ctx context.Context, keys []string, load func(ctx context.Context, keys []string) (map[string]V, error)) (_ map[string]V, err error) {
	out := make(map[string]V, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if c.isClosed() {
		return out, ErrClosed
	}
	if c.tr != nil {
		var span trace.Span
		if ctx, span = c.tr.start(ctx, spanGetMany); span != nil {
			span.SetAttributes(attribute.Int("cachex.keys", len(keys)))
			defer func() { end(span, err) }()
		}
	}
	strategy := c.Strategy()
	if strategy == None {
		keys = unique(keys)
		for range keys {
			c.m.gets[resultMiss].Inc()
		}
		return out, c.loadInto(ctx, out, keys, load, reasonMiss)
	}
	beta := c.Beta()
	if strategy == TTL {
		beta = 0
	}

	entries, values, down, err := c.readMany(ctx, keys, false)
	if err != nil {
		return out, err
	}
	if down {
		keys = unique(keys)
		return out, c.waitMany(ctx, out, keys, c.startMany(ctx, keys, nil, nil, load, false))
	}
	p := c.sortMany(keys, entries, values, beta, out)
	early, need := unique(p.early), unique(p.need)
	if len(early) > 0 {
		c.refreshManyAsync(ctx, early, p.seen, load)
	}
	if len(need) == 0 {
		return out, nil
	}
	if strategy == TTL { // the baseline: no deduplication
		return out, c.loadTTL(ctx, out, need, p.stale, p.read, load)
	}
	return out, c.waitMany(ctx, out, need, c.startMany(ctx, need, p.stale, p.read, load, true))
}

// manyPlan is what a batch read found: keys to load and keys to refresh
// early, with what each held.
type manyPlan struct {
	need, early []string
	stale, seen map[string]*entry // rare: made on first use
	read        map[string]string // what each key to load held: its identity
}

// sortMany decides each key of a batch read like Get (decide): a value to
// serve goes to out (and maybe to an early refresh), a miss or an expired
// value to the keys to load. Repeated keys are sorted twice (harmless) and
// deduplicated by the caller, where it matters: before loading or refreshing.
func (c *Cache[V]) sortMany(keys []string, entries []entry, values []V, beta float64, out map[string]V) manyPlan {
	var p manyPlan
	now := c.now()
	for i, k := range keys {
		e := &entries[i]
		switch c.decide(k, e, now, beta) {
		case serveHit:
			c.m.gets[resultHit].Inc()
		case serveEarly:
			c.m.gets[resultEarlyRefresh].Inc()
			p.early = append(p.early, k)
			p.seen = put(p.seen, k, e)
		case serveStale:
			c.m.gets[resultStale].Inc()
		default:
			p.need = append(p.need, k)
			p.read = put(p.read, k, e.identity())
			if e.valid {
				p.stale = put(p.stale, k, e)
			}
			continue
		}
		if !e.negative {
			out[k] = values[i]
		}
	}
	return p
}

// put sets m[k] = v, making m on first use.
func put[T any](m map[string]T, k string, v T) map[string]T {
	if m == nil {
		m = map[string]T{}
	}
	m[k] = v
	return m
}

// readMany reads keys and decodes each reply (decodeReply). down reports
// Redis unreachable.
func (c *Cache[V]) readMany(ctx context.Context, keys []string, fromServer bool) (entries []entry, values []V, down bool, err error) {
	rks := c.redisKeys(keys)
	raws, down, err := c.readRaw(ctx, rks, fromServer)
	if down || err != nil {
		return nil, nil, down, err
	}
	entries, values = make([]entry, len(keys)), make([]V, len(keys))
	for i, rk := range rks {
		raw, rerr := replyOf(raws[i])
		entries[i], values[i] = c.decodeReply(rk, raw, rerr)
	}
	return entries, values, false, nil
}

// readRaw reads rks (see fetch). An error reply to the whole read is every
// key's reply; down reports Redis unreachable.
func (c *Cache[V]) readRaw(ctx context.Context, rks []string, fromServer bool) (raws []any, down bool, err error) {
	if !c.brk.allow() {
		return nil, true, nil
	}
	err = c.redisCall(ctx, "get", func(ctx context.Context, l lane) error {
		var err error
		raws, err = c.fetch(ctx, l, rks, fromServer)
		return err
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	case unreachable(err):
		return nil, true, nil
	default:
		raws = make([]any, len(rks))
		for i := range raws {
			raws[i] = err
		}
	}
	return raws, false, nil
}

// mgetBatch is the most keys one MGET asks for: a larger MGET blocks the
// server (and every other client) for longer in one go.
const mgetBatch = 500

// fetch reads rks in one round trip per node: MGETs of at most mgetBatch
// keys (pipelined when there are more) on one server, GETs on a cluster (no
// cross-slot command) or on the batched lane (whose AutoPipeliner may serve
// either). A key's reply is a string, nil (absent) or an error reply (a GET
// of a key of another type: MGET answers nil); the error is the first
// failure to reach a node, so one is never hidden behind another's reply. A lone MGET is served by the near cache, if any (one
// entry per list of keys), unless fromServer is set or this cache
// invalidated one of the keys lately; a pipeline never is.
func (c *Cache[V]) fetch(ctx context.Context, l lane, rks []string, fromServer bool) ([]any, error) {
	single, ok := c.conn.rdb.(*redis.Client)
	ok = ok && !l.batched
	if ok && len(rks) <= mgetBatch && !c.near.mustReadServer(rks, fromServer) {
		return single.MGet(ctx, rks...).Result()
	}
	var cmds []redis.Cmder
	err := l.pipelined(ctx, func(p redis.Pipeliner) error {
		if ok {
			for at := 0; at < len(rks); at += mgetBatch {
				cmds = append(cmds, p.MGet(ctx, rks[at:min(at+mgetBatch, len(rks))]...))
			}
			return nil
		}
		for _, rk := range rks {
			cmds = append(cmds, p.Get(ctx, rk))
		}
		return nil
	})
	if abandoned(err) {
		return nil, err
	}
	raws := make([]any, 0, len(rks))
	for _, cmd := range cmds {
		err := cmd.Err()
		switch {
		case unreachable(err):
			return nil, err
		case err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err):
			c.m.redisErrs.WithLabelValues("get").Inc() // the call that carried it succeeded
		}
		switch cmd := cmd.(type) {
		case *redis.SliceCmd: // MGET: an error reply is every key's
			if err != nil {
				for range len(cmd.Args()) - 1 {
					raws = append(raws, err)
				}
			}
			raws = append(raws, cmd.Val()...)
		case *redis.StringCmd:
			raws = append(raws, anyReply(cmd.Result()))
		}
	}
	return raws, nil
}

// redisKeys builds the Redis keys of keys in one allocation.
func (c *Cache[V]) redisKeys(keys []string) []string {
	n := 0
	for _, k := range keys {
		n += len(c.opts.Prefix) + len(k) + 2 + len(c.versions)
	}
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteByte('{')
		b.WriteString(c.opts.Prefix)
		b.WriteString(k)
		b.WriteByte('}')
		b.WriteString(c.versions)
	}
	all, rks, at := b.String(), make([]string, len(keys)), 0
	for i, k := range keys {
		end := at + len(c.opts.Prefix) + len(k) + 2 + len(c.versions)
		rks[i] = all[at:end]
		at = end
	}
	return rks
}

// startMany joins or starts the in-process recompute of each key. Keys this
// call leads are loaded by one call of load in the background (and written
// back when store is set, each only if it still holds what read says it
// held). It returns the flights to wait for, by key.
func (c *Cache[V]) startMany(ctx context.Context, keys []string, stale map[string]*entry, read map[string]string, load func(context.Context, []string) (map[string]V, error), store bool) map[string]*flight[V] {
	fs := make(map[string]*flight[V], len(keys))
	var led []string
	for _, k := range keys {
		seen := bypassSeen // read is nil when the call bypasses Redis
		if read != nil {
			seen = read[k]
		}
		f, leader := c.loads.join(k, seen, c.origin(ctx))
		fs[k] = f
		if leader {
			led = append(led, k)
		}
	}
	if len(led) == 0 {
		return fs
	}
	lctx, cancel := c.detached(ctx, c.opts.LoadTimeout)
	ledFlights := make([]*flight[V], len(led))
	for i, k := range led {
		ledFlights[i] = fs[k]
	}
	c.loads.start(ledFlights, cancel)
	c.spawn(func() {
		defer cancel()
		for _, f := range ledFlights {
			f.after(lctx)
		}
		if store {
			if led, read = c.landWritten(lctx, led, stale, fs); len(led) == 0 {
				return
			}
		}
		c.loads.begin(ledFlights...)
		miss := reasonMiss
		if !store {
			miss = reasonBypass // read is nil: Redis unavailable
		}
		vals, delta, err := c.computeMany(lctx, led, stale, load, miss)
		if err == nil && store {
			c.storeMany(lctx, led, vals, delta, read)
		}
		for _, k := range led {
			v, found := vals[k]
			switch {
			case !store:
				c.land(k, fs[k], v, found, resultBypass, err)
			case err != nil && stale[k] != nil:
				sv, serr := c.decode(*stale[k])
				c.loads.land(k, fs[k], sv, resultStale, serr)
			default:
				c.land(k, fs[k], v, found, resultMiss, err)
			}
		}
	})
	return fs
}

// landWritten reads keys again and lands the flights of those that now hold
// a fresh value, or an expired one (stale) whose lock another instance holds
// (it is recomputing: Get serves the value meanwhile too). It returns the
// rest and what they hold now (the load starts after this read). A caller's
// read can predate a recompute that landed just before this call joined:
// without the second read the key would be computed twice (the batch form
// of lockSrc's check). If the read fails, the rest is keys and nothing is
// known of them: nothing will be written.
func (c *Cache[V]) landWritten(ctx context.Context, keys []string, stale map[string]*entry, fs map[string]*flight[V]) ([]string, map[string]string) {
	rks := c.redisKeys(keys)
	for _, k := range keys {
		if stale[k] != nil {
			rks = append(rks, lockKey(c.redisKey(k)))
		}
	}
	raws, down, err := c.readRaw(ctx, rks, true)
	if down || err != nil {
		return keys, nil
	}
	now, todo, read, lock := c.now(), keys[:0:0], make(map[string]string, len(keys)), len(keys)
	for i, k := range keys {
		raw, rerr := replyOf(raws[i])
		e, v := c.decodeReply(rks[i], raw, rerr)
		leased := false
		if stale[k] != nil {
			leased, lock = raws[lock] != nil, lock+1
		}
		switch {
		case e.valid && (now.Before(e.expiry) || leased):
			result := resultHit
			if !now.Before(e.expiry) {
				result = resultStale
			}
			v, err := served(&e, v)
			c.loads.land(k, fs[k], v, result, err)
		default:
			todo = append(todo, k)
			read[k] = e.identity()
		}
	}
	return todo, read
}

// land completes a key's flight: its value, not found, or the batch's error.
func (c *Cache[V]) land(k string, f *flight[V], v V, found bool, result string, err error) {
	if err == nil && !found {
		err = ErrNotFound
	}
	c.loads.land(k, f, v, result, err)
}

// computeMany calls the batch loader once and counts one recompute per key:
// reason expired for the keys in stale, miss (reasonMiss, or reasonBypass
// without Redis) for the others.
func (c *Cache[V]) computeMany(ctx context.Context, keys []string, stale map[string]*entry, load func(context.Context, []string) (map[string]V, error), miss string) (map[string]V, time.Duration, error) {
	release, err := c.loadSlot(ctx, miss)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	vals, delta, err := timeLoad(c, ctx, miss, len(keys), func(ctx context.Context) (map[string]V, error) { return load(ctx, keys) })
	expired := 0
	for _, k := range keys {
		if stale[k] != nil {
			expired++
		}
	}
	c.countRecomputes(reasonExpired, expired, err)
	c.countRecomputes(miss, len(keys)-expired, err)
	return vals, delta, err
}

// waitMany collects the flights of keys into out. Keys that do not exist are
// left out; the first other error is returned after all flights ended.
func (c *Cache[V]) waitMany(ctx context.Context, out map[string]V, keys []string, fs map[string]*flight[V]) error {
	var firstErr error
	for _, k := range keys {
		v, result, err := c.loads.wait(ctx, k, fs[k])
		c.m.gets[result].Inc()
		switch {
		case err == nil:
			out[k] = v
		case errors.Is(err, ErrNotFound):
		case firstErr == nil:
			firstErr = err
		}
	}
	return firstErr
}

// loadInto calls load once for keys without Redis and without deduplication
// (strategy None).
func (c *Cache[V]) loadInto(ctx context.Context, out map[string]V, keys []string, load func(context.Context, []string) (map[string]V, error), reason string) error {
	release, err := c.loadSlot(ctx, reason)
	if err != nil {
		return err
	}
	defer release()
	vals, _, err := timeLoad(c, ctx, reason, len(keys), func(ctx context.Context) (map[string]V, error) { return load(ctx, keys) })
	c.countRecomputes(reason, len(keys), err)
	for k, v := range vals {
		out[k] = v
	}
	return err
}

// loadTTL is the baseline for batches: load what is missing, write it back,
// no deduplication.
func (c *Cache[V]) loadTTL(ctx context.Context, out map[string]V, keys []string, stale map[string]*entry, read map[string]string, load func(context.Context, []string) (map[string]V, error)) error {
	vals, delta, err := c.computeMany(ctx, keys, stale, load, reasonMiss)
	for _, k := range keys {
		if err != nil && stale[k] != nil {
			if v, serr := c.decode(*stale[k]); serr == nil {
				out[k] = v
				c.m.gets[resultStale].Inc()
				continue
			}
		}
		c.m.gets[resultMiss].Inc()
		if v, ok := vals[k]; ok {
			out[k] = v
		}
	}
	if err == nil {
		c.storeMany(ctx, keys, vals, delta, read)
	}
	return err
}

// storeMany writes the values of keys (negative entries or deletions for the
// keys without one) in one pipeline, each only if the key still holds what
// read says it held before the load began (putSrc). Without read (nothing is
// known of the keys) it writes nothing.
func (c *Cache[V]) storeMany(ctx context.Context, keys []string, vals map[string]V, delta time.Duration, read map[string]string) {
	if read == nil || !c.brk.allow() {
		return
	}
	puts := make([]*redis.Cmd, 0, len(keys))
	err := c.redisCall(context.WithoutCancel(ctx), "set", func(ctx context.Context, l lane) error {
		return l.pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				v, found := vals[k]
				if payload, keep, ok := c.writeBack(v, found, delta); ok {
					puts = append(puts, c.scripts.put.Eval(ctx, p, []string{c.redisKey(k)}, read[k], payload, keep.Milliseconds()))
				}
			}
			return nil
		})
	})
	if !abandoned(err) {
		c.countDiscarded(puts...)
	}
}

// refreshManyAsync refreshes keys early in the background: one lock per key
// (taken in one pipeline), one batch load for the keys whose lock it got, one
// pipelined write-back guarded by those locks.
func (c *Cache[V]) refreshManyAsync(ctx context.Context, keys []string, seen map[string]*entry, load func(context.Context, []string) (map[string]V, error)) {
	c.inBackground(ctx, keys, func(ctx context.Context, mine []string) {
		c.refreshMany(ctx, mine, seen, load)
	})
}

func (c *Cache[V]) refreshMany(ctx context.Context, keys []string, seen map[string]*entry, load func(context.Context, []string) (map[string]V, error)) {
	if !c.brk.allow() {
		return
	}
	token := newToken() // one token for the batch: each lock is still per key
	mine := c.lockMany(ctx, keys, seen, token)
	if len(mine) == 0 {
		return
	}
	var vals map[string]V
	var delta time.Duration
	release, err := c.loadSlot(ctx, reasonEarly)
	if err == nil { // else every slot is busy: keep the current values, release the locks
		vals, delta, err = timeLoad(c, ctx, reasonEarly, len(mine), func(ctx context.Context) (map[string]V, error) { return load(ctx, mine) })
		release()
		c.countRecomputes(reasonEarly, len(mine), err)
	}
	c.finishMany(ctx, mine, token, vals, delta, err)
}

// lockMany takes the key lock of each key in one pipeline and returns the
// keys whose lock it got.
func (c *Cache[V]) lockMany(ctx context.Context, keys []string, seen map[string]*entry, token string) (mine []string) {
	locks := make([]*redis.Cmd, len(keys))
	err := c.redisCall(ctx, "lock", func(ctx context.Context, l lane) error {
		err := l.pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				rk := c.redisKey(k)
				locks[i] = c.scripts.lock.Eval(ctx, p, []string{rk, lockKey(rk)}, token, c.opts.LoadTimeout.Milliseconds(), seen[k].identity())
			}
			return nil
		})
		if !unreachable(err) {
			return nil // error replies are per key: counted below
		}
		return err
	})
	if err != nil {
		if ctx.Err() != nil { // abandoned, not refused: the locks may be set (see lock)
			for _, k := range keys {
				c.unlock(c.redisKey(k), token)
			}
		}
		return nil
	}
	for i, k := range keys {
		state, err := locks[i].Int64()
		switch {
		case err != nil: // an error reply: a failed call, not contention
			c.m.redisErrs.WithLabelValues("lock").Inc()
		case state == locked:
			mine = append(mine, k)
		case state == held:
			c.m.contended.Inc()
		}
	}
	return mine
}

// finishMany writes the early refresh's values under the keys' locks in one
// pipeline, or, when the load failed (loadErr), only releases the locks and
// keeps the current values.
func (c *Cache[V]) finishMany(ctx context.Context, mine []string, token string, vals map[string]V, delta time.Duration, loadErr error) {
	var finishes []*redis.Cmd
	err := c.redisCall(context.WithoutCancel(ctx), "set", func(ctx context.Context, l lane) error {
		return l.pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range mine {
				rk := c.redisKey(k)
				v, found := vals[k]
				var payload []byte
				var keep time.Duration
				ok := loadErr == nil
				if ok {
					payload, keep, ok = c.writeBack(v, found, delta)
				}
				if !ok { // keep the current value
					c.scripts.unlock.Eval(ctx, p, []string{lockKey(rk)}, token)
					continue
				}
				finishes = append(finishes, c.scripts.finish.Eval(ctx, p, []string{rk, lockKey(rk)}, token, payload, keep.Milliseconds()))
			}
			return nil
		})
	})
	if !abandoned(err) {
		c.countDiscarded(finishes...)
	}
}

// unique returns keys without repeats, in first-seen order.
func unique(keys []string) []string {
	if len(keys) < 2 {
		return keys
	}
	seen := make(map[string]struct{}, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}
