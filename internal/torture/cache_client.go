package torture

import "github.com/redis/go-redis/v9"

// cacheClient returns one instance's client of the cache workload: a
// cluster client through the masters' proxies (proxyOf maps a master's own
// address to its proxy's), or with cfg.Near a client of the one server's
// proxy with a near cache, deaf to invalidation pushes when cfg.Unsafe.
// Every call is bounded by cacheTimeout, with no retries.
func cacheClient(cfg CacheConfig, seeds []string, proxyOf map[string]string) redis.UniversalClient {
	if cfg.Near <= 0 {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, MaxRetries: -1, ContextTimeoutEnabled: true,
			DialTimeout: cacheTimeout, ReadTimeout: cacheTimeout, WriteTimeout: cacheTimeout,
			NewClient: func(opt *redis.Options) *redis.Client {
				if p, ok := proxyOf[opt.Addr]; ok {
					opt.Addr = p
				}
				return redis.NewClient(opt)
			}})
	}
	cc := redis.ClientSideCacheConfig{MaxEntries: 1000, MaxStaleness: cfg.Near}
	opt := &redis.Options{Addr: seeds[0], Protocol: 3, MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: cacheTimeout, ReadTimeout: cacheTimeout, WriteTimeout: cacheTimeout, ClientSideCacheConfig: &cc}
	if cfg.Unsafe {
		// The stated bound stays in ClientSideCacheConfig, for cachex; the
		// cache itself keeps entries until a connection closes.
		opt.ClientSideCache = deafCache{redis.NewLocalCache(redis.ClientSideCacheConfig{MaxEntries: 1000})}
	}
	return redis.NewClient(opt)
}

// deafCache is a near cache that drops Redis's invalidation pushes: what
// the bounded-staleness check must catch.
type deafCache struct{ *redis.LocalCache }

// DeleteByRedisKey ignores the invalidation of key.
func (deafCache) DeleteByRedisKey(string) int { return 0 }

var _ redis.Cache = deafCache{}
