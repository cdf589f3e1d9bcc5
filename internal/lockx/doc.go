// Package lockx is a distributed lock on Redis that tells its holder when it
// is lost, with Redlock quorum and fencing tokens.
//
// A Locker takes locks on one Redis server or on N independent masters
// (Redlock: a lock needs N/2+1 of them within its validity). Acquire (or
// TryAcquire, one attempt) returns a Lock that a quorum of servers confirmed
// is set to the caller, with:
//
//   - a context that ends, with cause ErrLost, as soon as the lock is lost or
//     can no longer be proven held: a watchdog extends the lock every TTL/3,
//     and if no quorum of extensions succeeds before the proven validity
//     (minus drift and a safety margin) runs out, the holder is told, before
//     the lock can expire on the servers and so before anyone else can take
//     it;
//   - a fencing token larger than every token issued before for the
//     resource, across restarts that lose data or bring back an old snapshot
//     and across Redlock quorums, as long as server clocks do not step back;
//     storage that rejects writes carrying an older token (package pgfence)
//     makes a lost lock harmless.
//
// Every call to a server is bounded by Options.Timeout, and calls to several
// servers decide on a quorum's replies, so no call waits for a paused or
// unreachable minority (under contention it costs its vote: more attempts,
// not failures); Acquire returns at most Timeout after Options.Wait. Waiters
// retry with jittered backoff and wake at once when the holder releases
// (Pub/Sub, on every server); with Options.HandOver (one server) they queue
// instead, and Release hands the lock to the first of them. Errors tell
// "held by another" (ErrNotAcquired), "too few servers answered"
// (ErrUnavailable) and "lost" (ErrLost) apart; a caller's cancelled context
// returns ctx.Err().
//
// The lock buys efficiency (one worker at a time); fencing buys safety. No
// lock based on expiry can stop a holder that pauses after its last check
// from writing. The stampede repository's docs/lockx.md lists each guarantee
// with the test that proves it and the faults it was tested under.
//
// With Options.TracerProvider, acquisitions are lockx.acquire spans and a
// lost lock is a lockx.lost event on the holder's span.
//
// Copying it: the package needs Go 1.26 or later and depends only on the
// standard library, github.com/redis/go-redis/v9 v9.22.0 or later (its
// AutoPipeliner), github.com/prometheus/client_golang and the OpenTelemetry
// trace API (go.opentelemetry.io/otel, go.opentelemetry.io/otel/trace);
// pgfence adds github.com/jackc/pgx/v5, and the tests add the OpenTelemetry
// SDK (go.opentelemetry.io/otel/sdk) and need redis-server on PATH
// (pgfence's, a Postgres named by DATABASE_URL). Take this directory (with
// pgfence) and, from the stampede repository, internal/redistest (the
// tests' private redis-server processes), change the import paths, and
// create each client with
// ContextTimeoutEnabled (New refuses a client, or an AutoPipeliner of one,
// without it). While a server is down go-redis logs a line per failed dial
// to its own logger: route it with redis.SetLogger, as the tests' TestMain
// does. The "Copy it" section of the stampede repository's docs/lockx.md
// has the rest.
package lockx
