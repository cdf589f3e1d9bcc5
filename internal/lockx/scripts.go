package lockx

import "github.com/redis/go-redis/v9"

// acquireSrc takes the lock with SET NX PX (relative expiry only) and, when it
// gets it, returns the resource's next fencing token. The counter starts from
// the server's clock in microseconds, so a server that restarts without its
// data still issues larger tokens than before (as long as fewer than a
// million locks a second were taken and its clock does not go back).
//
//	KEYS[1] lock key, KEYS[2] fence counter key (same hash slot)
//	ARGV[1] holder token, ARGV[2] TTL in milliseconds
//	returns the fencing token, or 0 when the lock is held
const acquireSrc = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[2], t[1] * 1000000 + t[2])
end
return redis.call('INCR', KEYS[2])`

// raiseSrc lifts the fence counter to at least ARGV[1] (after a Redlock
// quorum, to the largest token any node issued) and returns its value.
//
//	KEYS[1] fence counter key, ARGV[1] token
const raiseSrc = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local t = tonumber(ARGV[1])
if c < t then redis.call('SET', KEYS[1], ARGV[1]); return t end
return c`

// extendSrc resets the lock's expiry if the caller still holds it.
//
//	KEYS[1] lock key, ARGV[1] holder token, ARGV[2] TTL in milliseconds
//	returns 1 extended, 0 not held
const extendSrc = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`

// releaseSrc deletes the lock if the caller still holds it and wakes the
// waiters: a message on the resource's channel.
//
//	KEYS[1] lock key, ARGV[1] holder token, ARGV[2] wake-up channel
//	returns 1 released, 0 not held
const releaseSrc = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], '')
return 1`

// queuedAcquireSrc is acquireSrc for Options.HandOver. A caller that finds
// the lock already set to its own token was handed it while it was not
// listening: it holds it from now (full TTL again). A caller that finds the
// lock held joins the resource's queue (first come, first served) until its
// deadline; its own success takes it off the queue.
//
//	KEYS[1] lock key, KEYS[2] fence counter key, KEYS[3] queue (sorted set:
//	holder by arrival), KEYS[4] deadlines (hash: holder -> server ms), all
//	in one hash slot
//	ARGV[1] holder token, ARGV[2] TTL in milliseconds, ARGV[3] how long the
//	caller will wait, in milliseconds
//	returns the fencing token, or 0 when the lock is held
const queuedAcquireSrc = `
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  return tonumber(redis.call('GET', KEYS[2]))
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SET', KEYS[2], t[1] * 1000000 + t[2]) end
  return redis.call('INCR', KEYS[2])
end
local wait = tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', now, ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], now + wait)
for _, k in ipairs({KEYS[3], KEYS[4]}) do
  if redis.call('PTTL', k) < wait + 1000 then redis.call('PEXPIRE', k, wait + 1000) end
end
return 0`

// grantSrc releases for Options.HandOver, and takes a waiter that gives up
// off the queue. If the caller holds the lock, the first queued waiter whose
// deadline has not passed gets it at once: the lock is set to its token
// with a fresh TTL and a new fencing token, and the message on the wake-up
// channel names it ("holder:token"). With no such waiter the lock is
// deleted and the message is empty, as with releaseSrc.
//
//	KEYS as queuedAcquireSrc; ARGV[1] holder token, ARGV[2] wake-up channel,
//	ARGV[3] TTL in milliseconds
//	returns 2 handed over, 1 released, 0 not held
const grantSrc = `
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
while true do
  local head = redis.call('ZPOPMIN', KEYS[3])
  if #head == 0 then break end
  local deadline = tonumber(redis.call('HGET', KEYS[4], head[1]) or '0')
  redis.call('HDEL', KEYS[4], head[1])
  if deadline > now then
    redis.call('SET', KEYS[1], head[1], 'PX', ARGV[3])
    local token = redis.call('INCR', KEYS[2])
    redis.call('PUBLISH', ARGV[2], string.format('%s:%d', head[1], token)) -- not ..: Lua would print 1.7e+15
    return 2
  end
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], '')
return 1`

// scripts run by SHA (EVALSHA, with EVAL when a server does not have them).
type scripts struct {
	acquire, raise, extend, release *redis.Script
	queuedAcquire, grant            *redis.Script // Options.HandOver
}

func newScripts() scripts {
	return scripts{
		acquire:       redis.NewScript(acquireSrc),
		raise:         redis.NewScript(raiseSrc),
		extend:        redis.NewScript(extendSrc),
		release:       redis.NewScript(releaseSrc),
		queuedAcquire: redis.NewScript(queuedAcquireSrc),
		grant:         redis.NewScript(grantSrc),
	}
}
