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
// from writing. docs/lockx.md lists each guarantee with the test that proves
// it and the faults it was tested under.
//
// With Options.TracerProvider, acquisitions are lockx.acquire spans and a
// lost lock is a lockx.lost event on the holder's span.
//
// The package depends only on the standard library, go-redis v9.22.0 or
// later (its AutoPipeliner), client_golang and the OpenTelemetry trace API
// (no SDK); pgfence adds pgx v5. To copy it into a service, take this
// directory (with pgfence) and internal/redistest (its tests' private
// redis-server processes), change the import paths and create each client
// with ContextTimeoutEnabled; docs/lockx.md ("Copy it"), in the project the
// package comes from, has
// the rest.
//
// Comments cite sections of that project's documentation as
// docs/lockx.md, "Section"; keep those pages with a copy.
package lockx
