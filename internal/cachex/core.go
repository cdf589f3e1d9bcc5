package cachex

import (
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The per-key core that Get and GetMany share: what a key's reply means
// (decodeReply), what a read of it calls for (decide), and what a recompute
// writes back (writeBack). The I/O around them is each path's own, so that
// a single hit stays one GET.

// decodeReply decodes what a read of rk returned: raw, or rerr, which is nil,
// redis.Nil (absent) or an error reply (WRONGTYPE: a key of another type;
// MGET answers nil for one). The entry it returns carries the key's identity,
// and valid is set when it holds a value or a negative answer, fresh or
// expired, which v is. An absent key, a tombstone, a corrupt envelope, a
// foreign type and an error reply are not valid: all are recomputed and
// overwritten; corrupt envelopes and foreign types are counted as decode
// errors (an error reply was counted by the call).
func (c *Cache[V]) decodeReply(rk, raw string, rerr error) (e entry, v V) {
	switch {
	case rerr == nil:
	case isWrongType(rerr):
		c.m.redisErrs.WithLabelValues("decode").Inc()
		return e, v
	default: // absent, or an error reply: nothing to serve
		return e, v
	}
	if e, v, ok := c.reused.get(rk, raw); ok {
		return e, v
	}
	e, err := decodeEntry(bytesOf(raw))
	if err == nil && !e.negative && !e.tombstone {
		v, err = c.codec.Unmarshal(e.payload)
	}
	e.raw = raw
	switch {
	case err != nil:
		c.m.redisErrs.WithLabelValues("decode").Inc()
		return entry{raw: raw}, v
	case e.tombstone: // invalidated: a miss
		return e, v
	}
	e.valid = true
	c.reused.put(rk, raw, e, v)
	return e, v
}

// replyOf splits one key's reply as fetch gives it: a string, nil (absent)
// or an error reply. anyReply is its inverse.
func replyOf(raw any) (string, error) {
	switch r := raw.(type) {
	case string:
		return r, nil
	case error:
		return "", r
	}
	return "", redis.Nil
}

func anyReply(s string, err error) any {
	switch {
	case err == nil:
		return s
	case errors.Is(err, redis.Nil):
		return nil
	}
	return err
}

// isWrongType reports an error reply to a read of a key of another type.
func isWrongType(err error) bool { return redis.HasErrorPrefix(err, "WRONGTYPE") }

// A verdict is what a read of one key calls for.
type verdict uint8

const (
	serveHit   verdict = iota // the value is fresh
	serveEarly                // fresh, and XFetch says refresh it now, in the background
	serveStale                // expired while this process refreshes it: serve it meanwhile
	needLoad                  // a miss, or expired (e.valid): wait for the recompute
)

// decide is the XFetch decision on e, read for key at now.
func (c *Cache[V]) decide(key string, e *entry, now time.Time, beta float64) verdict {
	switch {
	case !e.valid:
		return needLoad
	case now.Before(e.expiry):
		if shouldRefresh(now, e.expiry, e.delta, beta, uniformOpen(c.opts.rand())) {
			return serveEarly
		}
		return serveHit
	case c.refreshInFlight(key):
		return serveStale
	}
	return needLoad
}

// served returns what a read of e serves: its value, or ErrNotFound.
func served[V any](e *entry, v V) (V, error) {
	if e.negative {
		return v, ErrNotFound
	}
	return v, nil
}

// writeBack is what a recompute writes for one key: v's envelope, a
// negative entry (found false, with NegativeTTL) or a deletion (an empty
// payload), and the Redis TTL to write it with. ok is false when v could
// not be encoded (counted): nothing is written then.
func (c *Cache[V]) writeBack(v V, found bool, delta time.Duration) (payload []byte, keep time.Duration, ok bool) {
	if !found && c.opts.NegativeTTL <= 0 {
		return nil, 0, true
	}
	payload, keep, err := c.encode(v, !found, delta)
	if err != nil {
		c.m.redisErrs.WithLabelValues("encode").Inc()
		return nil, 0, false
	}
	return payload, keep, true
}
