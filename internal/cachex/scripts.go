package cachex

import "github.com/redis/go-redis/v9"

// finishSrc writes a recomputed value only if the caller still holds the
// key's lock, then releases it. An Invalidate deletes the lock, so a
// recompute that started before a write to the source of truth cannot put
// its outdated value back afterwards. An empty value deletes the entry.
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

// lockSrc takes a key's lock only if the value is still the one the caller
// saw: the same envelope header, or still absent. Without the check, a read
// that fetched the old value just before another refresh wrote the new one
// would take the freshly released lock and recompute a second time.
//
//	KEYS[1] value key, KEYS[2] lock key (same hash slot)
//	ARGV[1] token, ARGV[2] PX milliseconds,
//	ARGV[3] header seen ("" = absent, "*" = anything: a corrupt entry)
//	returns 1 locked, 0 held by another, -1 value changed since it was seen
const lockSrc = `
if ARGV[3] ~= '*' then
  local v = redis.call('GET', KEYS[1])
  local seen = v and string.sub(v, 4, 23) or ''
  if seen ~= ARGV[3] then return -1 end
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`

// scripts are the Lua scripts a cache runs by SHA (EVALSHA, falling back to
// EVAL when the server does not have them yet).
type scripts struct {
	lock, finish, unlock *redis.Script
}

func newScripts() scripts {
	return scripts{lock: redis.NewScript(lockSrc), finish: redis.NewScript(finishSrc), unlock: redis.NewScript(unlockSrc)}
}
