package cachex

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Invalidate deletes the cached values of keys, in one round trip per Redis
// node, together with their locks: a recompute that was in flight when the
// source of truth changed cannot write its outdated value back (its write is
// guarded by the lock it no longer holds). Call it after the write to the
// source of truth has committed. It returns an error when Redis could not be
// reached; the entries then expire by themselves within TTL + Grace.
func (c *Cache[V]) Invalidate(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	err := c.redisCall(ctx, "del", func(ctx context.Context) error {
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				rk := c.redisKey(k)
				p.Del(ctx, rk, lockKey(rk)) // one hash slot: fine on a cluster
			}
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("cachex: %s: invalidate: %w", c.opts.Name, err)
	}
	return nil
}
