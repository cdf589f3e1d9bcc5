package cachex

import "github.com/redis/go-redis/v9"

// finishSrc writes a recomputed value only while the caller still holds the
// key's lock (Invalidate deletes it), then releases the lock. An empty value
// deletes the entry.
//
//	KEYS[1] value key, KEYS[2] lock key (same hash slot)
//	ARGV[1] token, ARGV[2] envelope or "", ARGV[3] PX milliseconds
const finishSrc = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
redis.call('DEL', KEYS[2])
return 1`

// unlockSrc releases a lock only if it still carries the caller's token.
//
//	KEYS[1] lock key, ARGV[1] token
const unlockSrc = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

// identitySrc is the Lua function the scripts compare what a key holds with
// what a caller saw (entry.identity): the SHA-1 of the string stored, ""
// when the key holds none (absent, or another type).
const identitySrc = `
local function identity(key)
  local v = redis.pcall('GET', key)
  if type(v) == 'table' then return '' end
  return v and redis.sha1hex(v) or ''
end
`

// lockSrc takes a key's lock only if the value is still the one the caller
// saw: without the check, a reader that fetched the old value a moment
// before a refresh landed would take the freshly released lock and
// recompute again.
//
//	KEYS[1] value key, KEYS[2] lock key (same hash slot)
//	ARGV[1] token, ARGV[2] PX milliseconds, ARGV[3] identity seen ("" = absent)
//	returns 1 locked, 0 held by another, -1 value changed since it was seen
const lockSrc = identitySrc + `
if identity(KEYS[1]) ~= ARGV[3] then return -1 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`

// putSrc writes a value computed without the key's lock only if the key
// still holds what the caller saw before its load began (a tombstone written
// by Invalidate meanwhile does not match). An empty value deletes the entry.
//
//	KEYS[1] value key, ARGV[1] identity seen ("" = absent), ARGV[2] envelope
//	or "", ARGV[3] PX milliseconds
//	returns 1 written, 0 the key changed since it was seen
const putSrc = identitySrc + `
if identity(KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`

// scripts are the Lua scripts a cache runs by SHA (EVALSHA, falling back to
// EVAL when the server does not have them yet).
type scripts struct {
	lock, finish, unlock, put *redis.Script
}

func newScripts() scripts {
	return scripts{lock: redis.NewScript(lockSrc), finish: redis.NewScript(finishSrc), unlock: redis.NewScript(unlockSrc), put: redis.NewScript(putSrc)}
}
