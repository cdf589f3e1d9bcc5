#!/usr/bin/env bash
# What a lock costs the Redis server, step by step: redis-benchmark sends
# each step (32 connections, 16 commands in flight on each) to a private
# redis-server on a unix socket of its own, and the server's own
# INFO commandstats says how long each call took it, the commands a script
# ran inside included. Prints a Markdown table.
#
#   bash bench/lockscripts.sh            # N=1000000 calls a step, KEYS=100000
#
# SCRIPTS (default internal/lockx/scripts.go) is the file the acquire
# script is read from: another version's, to set the two side by side.
#
# The steps are the uncontended path of a lock: a raw SET NX PX beside
# lockx's acquire script (its own source, read from internal/lockx), and a
# raw release (GET, DEL) beside lockx's (GET, DEL, PUBLISH). Keys are drawn
# from KEYS and locks live 1 ms, so most acquisitions find the lock free
# and the resource's fence counter there (a first pass leaves one for
# every key), as in a service's steady state. The releases run their whole
# path whatever the key holds: they show what each inner command costs.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-1000000}
keys=${KEYS:-100000}
src=${SCRIPTS:-internal/lockx/scripts.go}
log() { printf 'lockscripts: %s\n' "$*" >&2; }
for c in redis-server redis-cli redis-benchmark; do
	command -v "$c" >/dev/null || { log "$c is not installed"; exit 1; }
done

dir=$(mktemp -d)
sock=$dir/redis.sock
redis-server --port 0 --unixsocket "$sock" --save "" --appendonly no --dir "$dir" --logfile "" >/dev/null &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -s "$sock" ping >/dev/null 2>&1 && break; sleep 0.1; done
cli() { redis-cli -s "$sock" "$@"; }

# lua prints the Lua source of one of lockx's script constants, with the
# nextToken function it begins with when it is built on it.
lua() {
	awk -v name="$1" '
		$0 ~ "^const " name " = " { on = 1; if ($0 ~ /nextToken \+/) print nt; sub(/^[^`]*`/, ""); print; next }
		$0 ~ "^const nextToken = " { grab = 1; next }
		grab && /^`/ { grab = 0; next }
		grab { nt = nt $0 "\n"; next }
		on && /`/ { sub(/`.*/, ""); print; exit }
		on { print }' "$src"
}
acquire=$(cli script load "$(lua acquireSrc)")
release=$(cli script load "redis.call('GET', KEYS[1]) redis.call('DEL', KEYS[1]) redis.call('PUBLISH', ARGV[2], ARGV[3]) return 1")
rawRelease=$(cli script load "redis.call('GET', KEYS[1]) redis.call('DEL', KEYS[1]) return 1")

# step runs one step and prints its row: the server's microseconds per
# call (the outer command), those of each command run inside a script, and
# the requests per second redis-benchmark saw.
step() {
	local name=$1
	shift
	cli config resetstat >/dev/null
	rps=$(redis-benchmark -s "$sock" -n "$n" -c 32 -P 16 -r "$keys" -q "$@" 2>/dev/null |
		tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
	cli info commandstats | tr -d '\r' | awk -F'[:,=]' -v name="$name" -v rps="$rps" -v outer="$1" '
		/^cmdstat_/ && $1 !~ /config/ { cmd = substr($1, 9); us[cmd] = $7; calls[cmd] = $3 }
		END {
			inner = ""; sum = 0
			for (c in us) {
				if (c == outer) continue
				per = calls[c] / calls[outer]
				inner = inner sprintf("%s%s %.2f", inner == "" ? "" : ", ", toupper(c), us[c])
				if (per > 1.005) inner = inner sprintf(" ×%.0f", per)
				if (per < 0.995) inner = inner sprintf(" (%.0f%% of calls)", 100 * per)
				sum += us[c] * per
			}
			printf "| %s | %.2f | %s | %.2f | %.0f |\n", name, us[outer], inner == "" ? "-" : inner, us[outer] - sum, rps
		}'
}

log "warming up: a fence counter for each of the $keys keys"
redis-benchmark -s "$sock" -n $((3 * keys)) -c 32 -P 16 -r "$keys" -q evalsha "$acquire" 2 L:__rand_int__ F:__rand_int__ h 1 86400000 >/dev/null 2>&1
log "$n calls a step, 32 connections, 16 in flight each, on a unix socket ($(redis-server --version | awk '{print $3}'))"
echo "| step | server µs per call | of which inside the script (µs per call) | the call itself, µs | requests/s |"
echo "|---|---|---|---|---|"
step "raw acquire: SET NX PX" set L:__rand_int__ h NX PX 1
step "lockx acquire script: SET NX PX, TIME, SET GET PX" evalsha "$acquire" 2 L:__rand_int__ F:__rand_int__ h 1 86400000
step "raw release path: GET, DEL in a script" evalsha "$rawRelease" 1 L:__rand_int__ h
step "lockx release path: GET, DEL, PUBLISH in a script" evalsha "$release" 1 L:__rand_int__ h lockx:wake:x 1
