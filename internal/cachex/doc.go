// Package cachex is a read-through Redis cache that does not stampede.
//
// A Cache[V] serves values of type V from Redis and calls the caller's loader
// when there is no fresh value. It is built for expensive loaders (aggregate
// queries, remote calls) under heavy concurrent reads:
//
//   - XFetch (probabilistic early recomputation): a read refreshes a value in
//     the background before it expires, with a probability that grows as
//     expiry nears and with how long the recompute took (delta), so hot keys
//     are refreshed about once per TTL and readers never wait.
//   - Deduplication: one recompute per key per process (Get and GetMany
//     share it), and across instances a lock in Redis: an instance that
//     finds another refreshing serves the current value (duck-out); a cold
//     miss waits briefly for the other instance's value (lease).
//   - Failure: a Redis error is not a miss. When Redis is unreachable the
//     cache computes without it (one recompute per key per process), a
//     breaker stops paying a timeout on every call, and the cache heals when
//     Redis answers again. A failed recompute serves the expired value while
//     Redis still keeps it (Grace).
//   - Batches: GetMany reads N keys in one round trip per Redis node and
//     loads everything missing with one loader call.
//
// Every read is one GET: the envelope stored under a key carries the value
// and the XFetch inputs (computed-at time, delta, logical expiry), so no PTTL
// round trip is needed. A load that started before an Invalidate never
// lands after it, on any path (a tombstone and guarded writes).
//
// Near cache: over a *redis.Client with go-redis client-side caching
// (ClientSideCacheConfig with MaxStaleness), hits come from process memory
// and Redis's invalidation pushes keep them current. A read may return
// another instance's old value for at most MaxStaleness (usually a few ms);
// the instance's own Invalidate is read at once; every write and lock still
// goes to Redis. NearCacheCollector exports the client's counts.
//
// The strategy can be switched at run time between XFetch (default), TTL (a
// plain read-through cache: the stampede baseline) and None (no cache).
//
// Metrics (cachex_*, labelled by the cache's Name) go to the
// prometheus.Registerer in Options; several caches can share one. With
// Options.TracerProvider, reads and loader calls are spans (cachex.get,
// cachex.recompute, cachex.load_slot); a loader call under a sampled span
// puts its trace id on cachex_recompute_duration_seconds as an exemplar.
//
// Copying it: the package needs Go 1.26 or later and depends only on the
// standard library, github.com/redis/go-redis/v9 v9.22.0 or later (its
// AutoPipeliner; the near-cache invalidations metric needs v9.23),
// github.com/prometheus/client_golang and the OpenTelemetry trace API
// (go.opentelemetry.io/otel, go.opentelemetry.io/otel/trace); its tests add
// the OpenTelemetry SDK (go.opentelemetry.io/otel/sdk) and need
// redis-server on PATH. Take this directory and, from the stampede
// repository, internal/redistest (the tests' private redis-server
// processes), change the import paths, and
// create the client with ContextTimeoutEnabled (New refuses a client, or an
// AutoPipeliner of one, without it). While Redis is down go-redis logs a
// line per failed dial to its own logger: route it with redis.SetLogger, as
// the tests' TestMain does. The "Copy it" section of
// the stampede repository's docs/cachex.md has the rest, with the math, the
// failure behaviour and the choice of beta.
package cachex
