package lockx

import "github.com/redis/go-redis/v9"

// nextToken is the Lua function every script that grants the lock issues
// the fencing token with: max(counter + 1, server time in whole ms × 1000),
// stored as the counter (SET ... GET: Redis 6.2 or later) for fenceExpiry.
// The server time keeps tokens rising when a restart loses the counter or
// brings back an older snapshot, and across Redlock quorums, as long as
// server clocks do not step back.
const nextToken = `
local function next_token(fence, expiry)
  local t = redis.call('TIME')
  local token = t[1] * 1000000 + math.floor(t[2] / 1000) * 1000
  local last = tonumber(redis.call('SET', fence, token, 'PX', expiry, 'GET'))
  if last and last >= token then
    token = last + 1
    redis.call('SET', fence, token, 'PX', expiry)
  end
  return token
end
`

// acquireSrc takes the lock with SET NX PX (relative expiry only) and
// returns the resource's next fencing token. A caller that finds the lock
// already set to its own holder token holds it: the TTL is renewed and the
// token issued then is returned, so the script is safe to run twice (a
// batch resent after a network error).
//
//	KEYS[1] lock key, KEYS[2] fence counter key (same hash slot)
//	ARGV[1] holder token, ARGV[2] TTL in milliseconds, ARGV[3] fence
//	counter expiry in milliseconds
//	returns the fencing token, or 0 when another holds the lock
const acquireSrc = nextToken + `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local issued = tonumber(redis.call('GET', KEYS[2]) or '0')
  if issued > 0 then return issued end
end
return next_token(KEYS[2], ARGV[3])`

// raiseSrc lifts the fence counter to at least ARGV[1] (after a Redlock
// quorum, to the largest token any node issued) and returns its value.
//
//	KEYS[1] fence counter key, ARGV[1] token, ARGV[2] fence counter expiry
//	in milliseconds
const raiseSrc = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local t = tonumber(ARGV[1])
if c < t then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]); return t end
return c`

// extendSrc resets the lock's expiry if the caller still holds it.
//
//	KEYS[1] lock key, ARGV[1] holder token, ARGV[2] TTL in milliseconds
//	returns 1 extended, 0 not held
const extendSrc = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`

// releaseSrc deletes the lock if the caller still holds it and wakes the
// waiters: a message on the resource's channel, the release's id (the same
// on every server of one release, so that a waiter listening on all of them
// is woken once).
//
//	KEYS[1] lock key, ARGV[1] holder token, ARGV[2] wake-up channel,
//	ARGV[3] release id
//	returns 1 released, 0 not held
const releaseSrc = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`

// queuedAcquireSrc is acquireSrc for Options.HandOver: a caller that finds
// the lock set to its own token (handed to it) holds it with a full TTL; one
// that finds it held joins the queue until its deadline.
//
//	KEYS[1] lock key, KEYS[2] fence counter key, KEYS[3] queue (sorted set:
//	holder by arrival), KEYS[4] deadlines (hash: holder -> server ms), all
//	in one hash slot
//	ARGV[1] holder token, ARGV[2] TTL in milliseconds, ARGV[3] how long the
//	caller will wait, in milliseconds, ARGV[4] fence counter expiry in
//	milliseconds
//	returns the fencing token, or 0 when the lock is held
const queuedAcquireSrc = nextToken + `
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  local issued = tonumber(redis.call('GET', KEYS[2]) or '0')
  if issued > 0 then return issued end
  return next_token(KEYS[2], ARGV[4])
end
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  return next_token(KEYS[2], ARGV[4])
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local wait = tonumber(ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', now, ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], now + wait)
for _, k in ipairs({KEYS[3], KEYS[4]}) do
  if redis.call('PTTL', k) < wait + 1000 then redis.call('PEXPIRE', k, wait + 1000) end
end
return 0`

// grantSrc releases for Options.HandOver and takes a waiter that gives up
// off the queue. A held lock goes to the first queued waiter whose deadline
// has not passed (fresh TTL, next token, message "holder:token"), or is
// deleted (empty message). The fence counter it returns lets the caller
// ignore older hand-over messages.
//
//	KEYS as queuedAcquireSrc; ARGV[1] holder token, ARGV[2] wake-up channel,
//	ARGV[3] TTL in milliseconds, ARGV[4] fence counter expiry in milliseconds
//	returns 0 when the caller did not hold the lock, else the fence counter
//	before the hand-over
const grantSrc = nextToken + `
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local held = math.max(tonumber(redis.call('GET', KEYS[2]) or '0'), 1)
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
while true do
  local head = redis.call('ZPOPMIN', KEYS[3])
  if #head == 0 then break end
  local deadline = tonumber(redis.call('HGET', KEYS[4], head[1]) or '0')
  redis.call('HDEL', KEYS[4], head[1])
  if deadline > now then
    redis.call('SET', KEYS[1], head[1], 'PX', ARGV[3])
    local token = next_token(KEYS[2], ARGV[4])
    redis.call('PUBLISH', ARGV[2], string.format('%s:%d', head[1], token))
    return held
  end
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], '')
return held`

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
