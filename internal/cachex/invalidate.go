package cachex

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Invalidate replaces the values of keys (also under
// Options.InvalidateVersions) by tombstones and deletes their locks, in one
// round trip per Redis node. Call it after the write to the source of truth
// has committed: a load that started before it never lands after it, and a
// read that starts after it returns never joins such a load (a tombstone
// and guarded writes). When Redis cannot be reached it
// returns an error; the entries then expire within TTL + Grace.
func (c *Cache[V]) Invalidate(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	// The tombstone outlives every write that a load started before it could
	// still send: loads end at LoadTimeout, their writes Timeout later.
	keep := c.opts.TTL + c.opts.Grace + c.opts.LoadTimeout + c.opts.Timeout
	tomb := tombstone(c.now())
	var rks []string
	for _, k := range keys {
		base := "{" + c.opts.Prefix + k + "}"
		for _, versions := range c.invalidated {
			rks = append(rks, base+versions)
		}
	}
	if c.near != nil {
		c.near.invalidating(rks) // before the write: a read racing it goes to the server
	}
	err := c.redisCall(ctx, "del", func(ctx context.Context, l lane) error {
		return l.pipelined(ctx, func(p redis.Pipeliner) error {
			for _, rk := range rks {
				p.Set(ctx, rk, tomb, keep)
				p.Del(ctx, lockKey(rk)) // one hash slot: fine on a cluster
			}
			return nil
		})
	})
	for _, k := range keys {
		c.loads.forget(k)
	}
	if err != nil {
		return fmt.Errorf("cachex: %s: invalidate: %w", c.opts.Name, err)
	}
	return nil
}
