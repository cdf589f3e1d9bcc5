package cachex

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Invalidate makes the cached values of keys disappear, in one round trip
// per Redis node: each is replaced by a tombstone (a miss for every read)
// and its lock deleted. A load that started before Invalidate can then never
// land after it, whatever its path: writes made under the key's lock need
// the lock it no longer holds, and the others need the key to still hold
// what they read before loading, which the tombstone is not. In this
// process, a read that starts after Invalidate returns never joins a load
// that started before it. Call it after the write to the source of truth has
// committed. Entries of Options.InvalidateVersions are cleared too. It
// returns an error when Redis could not be reached; the entries then expire
// by themselves within TTL + Grace.
func (c *Cache[V]) Invalidate(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	// The tombstone outlives every write that a load started before it could
	// still send: loads end at LoadTimeout, their writes Timeout later.
	keep := c.opts.TTL + c.opts.Grace + c.opts.LoadTimeout + c.opts.Timeout
	tomb := tombstone(c.now())
	err := c.redisCall(ctx, "del", func(ctx context.Context) error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				base := "{" + c.opts.Prefix + k + "}"
				for _, versions := range c.invalidated {
					rk := base + versions
					p.Set(ctx, rk, tomb, keep)
					p.Del(ctx, lockKey(rk)) // one hash slot: fine on a cluster
				}
			}
			return nil
		})
		return err
	})
	for _, k := range keys {
		c.loads.forget(k)
	}
	if err != nil {
		return fmt.Errorf("cachex: %s: invalidate: %w", c.opts.Name, err)
	}
	return nil
}
