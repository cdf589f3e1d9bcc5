package cachex

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// near is a cache's use of its client's near cache: go-redis client-side
// caching, which keeps GET replies in process memory and drops them when
// Redis pushes an invalidation. A hit is
// then served without a round trip; bound is the client's MaxStaleness,
// the longest a reply whose invalidation was lost can be served.
//
// The push for a write travels on another connection than the write's
// reply, so right after its own Invalidate a process could still hold the
// old reply: keys this cache invalidated are read from the server until
// bound has passed (invalidated).
type near struct {
	bound       time.Duration
	mu          sync.Mutex
	invalidated map[string]time.Time // Redis key → when this cache invalidated it
	// recent is len(invalidated), kept under mu and read without it: a hit
	// takes no lock while this cache has invalidated nothing lately.
	recent atomic.Int64
}

// errNearBound is New's answer to a client-side cache with no MaxStaleness.
var errNearBound = errors.New("the client's client-side cache has no bound on staleness: " +
	"set ClientSideCacheConfig.MaxStaleness (a few seconds; it bounds how long a lost invalidation can serve an old value)")

// nearOf returns the near cache of rdb: nil when rdb has no client-side
// cache (go-redis offers one only on a *redis.Client over RESP3: a cluster
// client or a ring reads every hit from Redis), and an error when the cache
// states no staleness bound. An AutoPipeliner hides its client: over one of
// a client with client-side caching, its GETs are cached but nearOf cannot
// tell, so give New the client itself.
func nearOf(rdb redis.UniversalClient) (*near, error) {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil, nil
	}
	o := c.Options()
	if o.Protocol == 2 || (o.ClientSideCacheConfig == nil && o.ClientSideCache == nil) {
		return nil, nil
	}
	if o.ClientSideCacheConfig == nil || o.ClientSideCacheConfig.MaxStaleness <= 0 {
		return nil, errNearBound
	}
	return &near{bound: o.ClientSideCacheConfig.MaxStaleness, invalidated: map[string]time.Time{}}, nil
}

// nearSweepAt is the size of invalidated at which a record drops the keys whose
// bound has passed.
const nearSweepAt = 1024

// invalidating records that this cache invalidates the Redis keys rks.
func (n *near) invalidating(rks []string) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.invalidated) >= nearSweepAt {
		for rk, at := range n.invalidated {
			if now.Sub(at) >= n.bound {
				delete(n.invalidated, rk)
			}
		}
	}
	for _, rk := range rks {
		n.invalidated[rk] = now
	}
	n.recent.Store(int64(len(n.invalidated)))
}

// invalidatedLately reports whether this cache invalidated rk less than
// bound ago: a read of rk must then go to the server, not use the near
// cache's reply.
func (n *near) invalidatedLately(rk string) bool {
	if n.recent.Load() == 0 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.invalidated[rk]
	if ok && time.Since(at) >= n.bound {
		delete(n.invalidated, rk)
		n.recent.Store(int64(len(n.invalidated)))
		ok = false
	}
	return ok
}

// read returns the string at rk for a lookup: from the near cache when
// there is one and fromServer is false, else from Redis. GETEX with no
// option reads like GET and is not on go-redis's list of cached commands.
func (c *Cache[V]) read(ctx context.Context, l lane, rk string, fromServer bool) (string, error) {
	switch {
	case c.near == nil:
		return l.get(ctx, rk)
	case fromServer || c.near.invalidatedLately(rk):
		cmd := redis.NewStringCmd(ctx, "getex", rk)
		if err := l.do(ctx, cmd); err != nil {
			return "", err
		}
		return cmd.Result()
	}
	return c.conn.rdb.Get(ctx, rk).Result()
}

// mustReadServer reports whether a read of rks must skip the near cache:
// fromServer, or a key this cache invalidated lately. False without one.
func (n *near) mustReadServer(rks []string, fromServer bool) bool {
	if n == nil {
		return false
	}
	if fromServer {
		return true
	}
	for _, rk := range rks {
		if n.invalidatedLately(rk) {
			return true
		}
	}
	return false
}
