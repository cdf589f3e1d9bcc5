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

// scripts run by SHA (EVALSHA, with EVAL when a server does not have them).
type scripts struct {
	acquire, raise, extend, release *redis.Script
}

func newScripts() scripts {
	return scripts{
		acquire: redis.NewScript(acquireSrc),
		raise:   redis.NewScript(raiseSrc),
		extend:  redis.NewScript(extendSrc),
		release: redis.NewScript(releaseSrc),
	}
}
