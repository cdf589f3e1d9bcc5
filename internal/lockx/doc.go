// Package lockx is a distributed lock on Redis that tells its holder when it
// is lost, with Redlock quorum and fencing tokens.
//
// A Locker takes locks on one Redis server or on N independent masters
// (Redlock: a lock needs N/2+1 of them within its validity). Acquire returns
// a Lock with:
//
//   - a context that ends, with cause ErrLost, as soon as the lock is lost or
//     can no longer be proven held: a watchdog extends the lock every TTL/3,
//     and if no quorum of extensions succeeds before the proven validity
//     (minus drift and a safety margin) runs out, the holder is told, before
//     the lock can expire on the servers and so before anyone else can take
//     it;
//   - a fencing token that increases strictly per resource, across server
//     restarts that lose data and across Redlock quorums; storage that
//     rejects writes carrying an older token (see package pgfence) makes a
//     lost lock harmless.
//
// Acquire keys are set with SET NX PX (relative expiry; validity is tracked
// on the monotonic clock); release and extension are compare-and-delete and
// compare-and-pexpire Lua scripts run by SHA. Waiters retry with jittered
// backoff, and wake at once when the holder releases (Pub/Sub); with
// Options.HandOver (one server) they queue instead, and Release hands the
// lock to the first of them, first come, first served. Errors tell
// "not acquired in time" (ErrNotAcquired), "lost" (ErrLost) and transport
// failures apart; a caller's cancelled context returns ctx.Err().
//
// The lock buys efficiency (one worker at a time); fencing buys safety. No
// lock based on expiry can stop a holder that pauses after its last check
// from writing: see docs/lockx.md.
//
// The package depends only on the standard library, go-redis and
// client_golang; pgfence adds pgx. Copy the directory into your service and
// change the package path.
package lockx
