package cachex

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// refreshAsync starts an early refresh of key in the background unless one
// is in flight in this process or all MaxRefreshes slots are busy (skipping
// costs nothing: the value is fresh). seen is the entry it was decided on,
// lead how long before expiry; the loader keeps ctx's values, not its
// cancellation.
func (c *Cache[V]) refreshAsync(ctx context.Context, key string, load func(context.Context) (V, error), seen entry, lead time.Duration) {
	c.inBackground(ctx, []string{key}, func(ctx context.Context, _ []string) {
		c.refresh(ctx, key, load, seen, lead)
	})
}

// inBackground runs refresh in a goroutine for those of keys not already
// being recomputed in this process, if a background slot is free. The keys
// count as refreshing until it returns. refresh's context has the values of
// ctx and ends at LoadTimeout or Close.
func (c *Cache[V]) inBackground(ctx context.Context, keys []string, refresh func(ctx context.Context, keys []string)) {
	c.refreshMu.Lock()
	var mine []string
	for _, k := range keys {
		if _, ok := c.refreshing[k]; !ok && !c.loads.busy(k) {
			mine = append(mine, k)
		}
	}
	if len(mine) == 0 {
		c.refreshMu.Unlock()
		return
	}
	select {
	case c.slots <- struct{}{}:
	default:
		c.refreshMu.Unlock()
		return
	}
	for _, k := range mine {
		c.refreshing[k] = struct{}{}
	}
	c.refreshMu.Unlock()

	c.spawn(func() {
		defer func() {
			c.refreshMu.Lock()
			for _, k := range mine {
				delete(c.refreshing, k)
			}
			c.refreshMu.Unlock()
			<-c.slots
		}()
		ctx, cancel := c.detached(ctx, c.opts.LoadTimeout)
		defer cancel()
		refresh(ctx, mine)
	})
}

// refresh recomputes key under its lock. If another instance holds the lock it
// ducks out: that instance is refreshing, and the value is still fresh. If the
// value changed since it was seen, someone already refreshed it.
func (c *Cache[V]) refresh(ctx context.Context, key string, load func(context.Context) (V, error), seen entry, lead time.Duration) {
	rk := c.redisKey(key)
	token := newToken()
	state, err := c.lock(ctx, rk, token, seen.identity())
	if err != nil || state == changed {
		return
	}
	if state == held {
		c.m.contended.Inc()
		return
	}
	c.m.lead.Observe(lead.Seconds())
	v, delta, err := c.compute(ctx, load, reasonEarly, attribute.Float64("cachex.lead_ms", float64(lead)/float64(time.Millisecond)))
	if err != nil && !errors.Is(err, ErrNotFound) {
		c.unlock(rk, token) // keep serving the current value; a later read retries
		return
	}
	c.store(ctx, rk, token, "", v, err, delta)
}

// refreshInFlight reports whether this process is refreshing key.
func (c *Cache[V]) refreshInFlight(key string) bool {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	_, ok := c.refreshing[key]
	return ok
}
