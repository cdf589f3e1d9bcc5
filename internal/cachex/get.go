package cachex

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Get returns the value of key, calling load when the cache has no fresh
// value. Under XFetch a hit is one GET and may start a deduplicated
// background refresh (more likely as expiry nears); a miss waits for the
// key's one recompute in this process, or for another instance's that holds
// the key's lock; an expired value whose refresh is under way is served as
// stale. TTL recomputes on every miss, None on every call. An unreachable
// Redis is bypassed, never returned as an error; a failed load serves the
// expired value within Grace; ErrNotFound is returned (cached with
// NegativeTTL). load keeps ctx's values, not its cancellation, is bounded by
// LoadTimeout and may outlive Get: a caller never waits past its context
// for a recompute others share.
func (c *Cache[V]) Get(ctx context.Context, key string, load func(context.Context) (V, error)) (v V, err error) {
	if c.isClosed() {
		return v, ErrClosed
	}
	if c.tr != nil {
		var span trace.Span
		if ctx, span = c.tr.start(ctx, spanGet); span != nil {
			span.SetAttributes(attribute.String("cachex.key", key))
			defer func() { end(span, err) }()
		}
	}
	switch c.Strategy() {
	case None:
		c.count(ctx, resultMiss)
		v, _, err := c.compute(ctx, load, reasonMiss)
		return v, err
	case TTL:
		return c.getTTL(ctx, key, load)
	}
	return c.getXFetch(ctx, key, load, c.Beta())
}

// lookup reads rk, from the near cache if there is one unless fromServer is
// set (a read again, after Redis said the key changed), and decodes it
// (decodeReply); down is set when Redis cannot be reached.
func (c *Cache[V]) lookup(ctx context.Context, rk string, fromServer bool) (e entry, v V, down bool, err error) {
	if !c.brk.allow() {
		return e, v, true, nil
	}
	var raw string
	var rerr error
	err = c.redisCall(ctx, "get", func(ctx context.Context, l lane) error {
		raw, rerr = c.read(ctx, l, rk, fromServer)
		if rerr != nil && isWrongType(rerr) {
			return nil // Redis answered: a key of another type, counted as decode
		}
		return rerr
	})
	switch {
	case err == nil || errors.Is(err, redis.Nil):
	case ctx.Err() != nil:
		return e, v, false, ctx.Err()
	case unreachable(err):
		return e, v, true, nil
	}
	e, v = c.decodeReply(rk, raw, rerr)
	return e, v, false, nil
}

func (c *Cache[V]) getXFetch(ctx context.Context, key string, load func(context.Context) (V, error), beta float64) (V, error) {
	e, v, down, err := c.lookup(ctx, c.redisKey(key), false)
	if err != nil {
		return v, err
	}
	if down {
		return c.bypass(ctx, key, load)
	}
	now := c.now()
	switch c.decide(key, &e, now, beta) {
	case serveHit:
		c.count(ctx, resultHit)
	case serveEarly:
		c.count(ctx, resultEarlyRefresh)
		c.refreshAsync(ctx, key, load, e, e.expiry.Sub(now))
	case serveStale:
		// Expired a moment ago while this process refreshes it: serve the
		// old value until the new one lands rather than wait.
		c.count(ctx, resultStale)
	default:
		return c.recompute(ctx, key, load, e)
	}
	return served(&e, v)
}

// getTTL is plain read-through: no early refresh, no deduplication.
func (c *Cache[V]) getTTL(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	rk := c.redisKey(key)
	e, v, down, err := c.lookup(ctx, rk, false)
	if err != nil {
		return v, err
	}
	if down {
		return c.bypass(ctx, key, load)
	}
	switch c.decide(key, &e, c.now(), 0) {
	case serveHit:
		c.count(ctx, resultHit)
		return served(&e, v)
	case serveStale:
		c.count(ctx, resultStale)
		return served(&e, v)
	}
	reason := reasonMiss
	if e.valid {
		reason = reasonExpired
	}
	nv, delta, lerr := c.compute(ctx, load, reason)
	if lerr != nil && !errors.Is(lerr, ErrNotFound) {
		if e.valid {
			c.count(ctx, resultStale)
			return served(&e, v)
		}
		c.count(ctx, resultMiss)
		return nv, lerr
	}
	c.count(ctx, resultMiss)
	c.store(ctx, rk, "", e.identity(), nv, lerr, delta)
	return nv, lerr
}

// bypassSeen is what a bypassing caller read in Redis: nothing. Bypasses
// join each other's flights, not those of callers that read an entry.
const bypassSeen = "bypass"

// bypass computes without Redis, one recompute per key in this process.
func (c *Cache[V]) bypass(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	f, leader := c.loads.join(key, bypassSeen, c.origin(ctx))
	if leader {
		lctx, cancel := c.detached(ctx, c.opts.LoadTimeout)
		c.loads.start([]*flight[V]{f}, cancel)
		c.spawn(func() {
			defer cancel()
			f.after(lctx)
			c.loads.begin(f)
			v, _, err := c.compute(lctx, load, reasonBypass)
			c.loads.land(key, f, v, resultBypass, err)
		})
	}
	v, _, err := c.loads.wait(ctx, key, f)
	c.count(ctx, resultBypass)
	return v, err
}

// recompute serves a miss or the expired entry e (e.valid): it waits for the
// key's one recompute in this process, which it starts if none is in
// flight. (e is passed by value so that a hit never allocates it.)
func (c *Cache[V]) recompute(ctx context.Context, key string, load func(context.Context) (V, error), e entry) (V, error) {
	f, leader := c.loads.join(key, e.identity(), c.origin(ctx))
	if !leader && c.tr != nil {
		// The recompute this read waits for is in the leader's trace.
		trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: f.origin})
	}
	if leader {
		lctx, cancel := c.detached(ctx, c.opts.LoadTimeout)
		c.loads.start([]*flight[V]{f}, cancel)
		c.spawn(func() {
			defer cancel()
			f.after(lctx)
			var stale *entry
			if e.valid {
				stale = &e
			}
			v, result, err := c.lead(lctx, key, load, stale, e.identity())
			c.loads.land(key, f, v, result, err)
		})
	}
	v, result, err := c.loads.wait(ctx, key, f)
	c.count(ctx, result)
	return v, err
}

// lead runs the recompute that a process's callers wait for. It takes the
// key's lock in Redis (the lease). If another instance holds it, that
// instance is recomputing: an expired value is served meanwhile, and a cold
// miss waits up to LeaseWait for the other instance's value instead of
// recomputing too. seen is the identity of what the caller read; a value
// computed without the lock is written only if the key still holds it.
func (c *Cache[V]) lead(ctx context.Context, key string, load func(context.Context) (V, error), stale *entry, seen string) (V, string, error) {
	rk := c.redisKey(key)
	reason := reasonMiss
	if stale != nil {
		reason = reasonExpired
	}
	token := ""
	if !c.opts.noLease {
		t := newToken()
		switch state, err := c.lock(ctx, rk, t, seen); {
		case err != nil: // Redis trouble: compute without the lease
		case state == locked:
			token = t
		case state == changed: // written since we looked: read it, no recompute needed
			e, v, _, _ := c.lookup(ctx, rk, true)
			if e.valid && !e.negative && c.now().Before(e.expiry) {
				return v, resultHit, nil
			}
			seen = e.identity() // the load starts after this read
		case stale != nil: // another instance is recomputing: serve the old value meanwhile
			sv, err := c.decode(*stale)
			return sv, resultStale, err
		default:
			if v, ok := c.awaitOther(ctx, rk, stale); ok {
				return v, resultMiss, nil
			}
		}
	}
	v, delta, err := c.compute(ctx, load, reason)
	if err != nil && !errors.Is(err, ErrNotFound) {
		c.unlock(rk, token)
		return c.staleOr(stale, v, err)
	}
	c.store(ctx, rk, token, seen, v, err, delta)
	return v, resultMiss, err
}

// staleOr serves the expired value stale in place of a failed load's (v,
// err), when there is one that decodes.
func (c *Cache[V]) staleOr(stale *entry, v V, err error) (V, string, error) {
	if stale != nil {
		sv, serr := c.decode(*stale)
		if serr == nil || errors.Is(serr, ErrNotFound) {
			return sv, resultStale, serr
		}
	}
	return v, resultMiss, err
}

// awaitOther polls for the value another instance is computing, until a
// fresh entry newer than stale appears or LeaseWait passes.
func (c *Cache[V]) awaitOther(ctx context.Context, rk string, stale *entry) (V, bool) {
	var zero V
	deadline := time.Now().Add(c.opts.LeaseWait)
	pause := 2 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return zero, false
		case <-time.After(pause):
		}
		e, v, down, err := c.lookup(ctx, rk, true)
		if err != nil || down {
			return zero, false
		}
		if e.valid && c.now().Before(e.expiry) && (stale == nil || e.computedAt.After(stale.computedAt)) && !e.negative {
			return v, true
		}
		if time.Now().After(deadline) {
			return zero, false
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Outcomes of lock.
const (
	locked  = 1  // the caller holds the key's lock
	held    = 0  // another caller holds it
	changed = -1 // the value is no longer the one the caller saw
)

// lock tries to take the key's lock for token, provided the value is still
// the one seen (see lockSrc). A call abandoned because ctx ended (Close
// cancelled the recompute) may have taken the lock all the same: it is
// released, rather than left to expire at LoadTimeout.
func (c *Cache[V]) lock(ctx context.Context, rk, token, seen string) (int, error) {
	if !c.brk.allow() {
		return 0, errBreakerOpen
	}
	var state int64
	err := c.redisCall(ctx, "lock", func(ctx context.Context, l lane) error {
		cmd, err := l.run(ctx, c.scripts.lock, []string{rk, lockKey(rk)}, token, c.opts.LoadTimeout.Milliseconds(), seen)
		if err == nil {
			state, err = cmd.Int64()
		}
		return err
	})
	if err != nil && ctx.Err() != nil {
		c.unlock(rk, token)
	}
	return int(state), err
}

// unlock releases the key's lock if token still holds it; "" is a no-op.
func (c *Cache[V]) unlock(rk, token string) {
	if token == "" || !c.brk.allow() {
		return
	}
	// Not under c.base: a lock must be released also when Close cancelled
	// the recompute that held it.
	_ = c.redisCall(context.Background(), "unlock", func(ctx context.Context, l lane) error {
		_, err := l.run(ctx, c.scripts.unlock, []string{lockKey(rk)}, token)
		return err
	})
}

// store writes a computed value (or, for ErrNotFound, a negative entry or a
// deletion). With a token it writes only while the lock is still the
// caller's, and releases it; without one, only while the key still holds
// what the caller saw (seen) before its load began. Either way a load that
// started before an Invalidate never lands after it.
func (c *Cache[V]) store(ctx context.Context, rk, token, seen string, v V, loadErr error, delta time.Duration) {
	payload, keep, ok := c.writeBack(v, !errors.Is(loadErr, ErrNotFound), delta)
	if !ok {
		c.unlock(rk, token)
		return
	}
	if !c.brk.allow() {
		return
	}
	// The write (and the release of the lock with it) happens even when the
	// caller's context ended meanwhile, or Close cancelled the recompute.
	var cmd *redis.Cmd
	err := c.redisCall(context.WithoutCancel(ctx), "set", func(ctx context.Context, l lane) error {
		var err error
		if token != "" {
			cmd, err = l.run(ctx, c.scripts.finish, []string{rk, lockKey(rk)}, token, payload, keep.Milliseconds())
		} else {
			cmd, err = l.run(ctx, c.scripts.put, []string{rk}, seen, payload, keep.Milliseconds())
		}
		return err
	})
	if err == nil {
		c.countDiscarded(cmd)
	}
}

// countDiscarded counts a write-back the script refused (it returns 0 when
// the key, or its lock, changed since the recompute began).
func (c *Cache[V]) countDiscarded(cmds ...*redis.Cmd) {
	for _, cmd := range cmds {
		if n, err := cmd.Int64(); err == nil && n == 0 {
			c.m.discarded.Inc()
		}
	}
}

var errBreakerOpen = errors.New("cachex: Redis circuit breaker open")
