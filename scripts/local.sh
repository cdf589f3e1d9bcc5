#!/usr/bin/env bash
# The whole stack from local binaries, without Docker: make run-local / make stop-local.
# Reuses a running Postgres (127.0.0.1:5432, user postgres). Starts its own Redis servers
# on free loopback ports (the caches' Redis and the three of the lock's Redlock quorum;
# DEBUG allowed from loopback, so that redis-cli -u "$REDIS_URL" DEBUG SLEEP 30 takes the
# cache Redis away, as docs/experiments/03-redis-outage.md does; one an older version of
# this script started without it is restarted on its port),
# Jaeger when built (make jaeger: .tools/bin/jaeger) on free loopback ports, migrates,
# seeds and starts the API on 127.0.0.1:8080 (exporting its traces to that Jaeger) and,
# when installed, Prometheus on 127.0.0.1:9090 (with exemplar storage; start waits for its
# first scrape of the API, so that a query right after it finds the API's metrics). Everything it
# starts is recorded in .run/ (*.pid; redis-*.port for each Redis, jaeger-otlp.port and
# jaeger-ui.port; env holds the addresses) and stopped by "stop". A second "start" reuses
# the recorded servers that still run (the process on the recorded port must be the
# recorded pid), and restarts the API or Jaeger when its binary or settings changed.
#
# Settings (environment): HTTP_ADDR (127.0.0.1:8080), DB_NAME (stampede), RUN_DIR (.run),
# PROMETHEUS_ADDR (127.0.0.1:9090), SCALE (seed scale, 1), ADMIN_TOKEN (local-admin),
# DEMO (1: also run the load generator's endless demo mix, as compose does; off by default,
# so that the guided experiments drive the API alone; a start without it stops a running one),
# LOADGEN_ADDR (127.0.0.1:9102: the demo's /metrics, which Prometheus scrapes; env records it as
# LOADGEN_METRICS_ADDR and the API as LOADGEN_TARGET, the load generator's defaults, so an experiment's
# loadgen is scraped too; without DEMO=1 the target is labelled optional, left out of StampedeTargetDown),
# JAEGER (unset: run Jaeger when JAEGER_BIN exists; 1: build it first with make jaeger, which
# takes a few minutes the first time and seconds after; 0: no Jaeger, and a running one
# is stopped; the API then gets the environment's OTEL_EXPORTER_OTLP_ENDPOINT, if any),
# JAEGER_BIN (.tools/bin/jaeger), TRACE_SAMPLE (the API's sampling ratio; its default if unset),
# NEAR_HTTP_ADDR (127.0.0.1:8081: where "near" runs a second API with the near cache on).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RUN=${RUN_DIR:-$root/.run}
[[ $RUN == /* ]] || RUN="$PWD/$RUN" # absolute: the API is recognised by its command line
JAEGER_BIN=${JAEGER_BIN:-$root/.tools/bin/jaeger}
[[ $JAEGER_BIN == /* ]] || JAEGER_BIN="$PWD/$JAEGER_BIN" # absolute: make -C builds it
cd "$root"
HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
NEAR_HTTP_ADDR=${NEAR_HTTP_ADDR:-127.0.0.1:8081}
DB_NAME=${DB_NAME:-stampede}
PROMETHEUS_ADDR=${PROMETHEUS_ADDR:-127.0.0.1:9090}
LOADGEN_ADDR=${LOADGEN_ADDR:-127.0.0.1:9102}
DEMO=${DEMO:-0}
JAEGER=${JAEGER:-}
JAEGER_CONFIG=$root/deploy/jaeger/local.yaml
# Exemplars (trace ids on the API's latency histograms) are kept only with
# this feature; Prometheus asks for OpenMetrics, which carries them.
PROMETHEUS_FEATURES=--enable-feature=exemplar-storage
REDIS_NAMES=(cache lock1 lock2 lock3)
say() { printf 'run-local: %s\n' "$*"; }

# alive reports whether process $1 runs (a zombie does not).
alive() {
	local stat
	stat=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${stat:0:1}" != Z ]
}

# args_of prints the command line of process $1, nothing when none runs.
args_of() { ps -o args= -p "$1" 2>/dev/null || true; }

# redis_pid prints the process id the Redis on 127.0.0.1:$1 reports, nothing
# when none answers.
redis_pid() {
	redis-cli -h 127.0.0.1 -p "$1" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p'
}

# redis_debug reports whether the Redis on 127.0.0.1:$1 allows DEBUG from
# loopback (started with --enable-debug-command local or yes).
redis_debug() {
	[[ $(redis-cli -h 127.0.0.1 -p "$1" config get enable-debug-command 2>/dev/null | tail -n1) =~ ^(local|yes)$ ]]
}

# listening reports whether anything accepts connections on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# random_port prints a port in 20000-32767: below Linux's ephemeral range, so
# that no outgoing connection holds it.
random_port() { echo $((20000 + RANDOM % 12768)); }

# checksum prints the SHA-256 of file $1.
checksum() {
	if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1
}

# end_process stops process $2 (named $1 in messages) with SIGTERM, and
# SIGKILL if it has not exited after 30s (the API drains for up to 20s).
end_process() {
	local name=$1 pid=$2
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 300); do alive "$pid" || break; sleep 0.1; done
	if alive "$pid"; then
		say "$name (pid $pid) ignored SIGTERM for 30s: killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	say "stopped $name (pid $pid)"
}

# redis_ours reports whether the Redis recorded as $1 runs: the server on the
# recorded port reports the recorded pid.
redis_ours() {
	local pid port
	pid=$(cat "$RUN/redis-$1.pid" 2>/dev/null) || return 1
	port=$(cat "$RUN/redis-$1.port" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(redis_pid "$port")" = "$pid" ]
}

# start_redis reuses the Redis recorded as $1 when it runs, or starts one on
# a free loopback port (the recorded one first, so that the addresses survive
# a stop and start) and records its pid and port.
start_redis() {
	local name=$1 pidf="$RUN/redis-$1.pid" portf="$RUN/redis-$1.port" pid port
	port=$(cat "$portf" 2>/dev/null || true)
	if redis_ours "$name"; then
		if redis_debug "$port"; then
			say "redis $name: reusing 127.0.0.1:$port (pid $(cat "$pidf"))"
			return
		fi
		# Started by an older version of this script: DEBUG is fixed at start.
		say "redis $name: started without --enable-debug-command: restarting it on 127.0.0.1:$port"
		end_process "redis $name" "$(cat "$pidf")"
	fi
	pid=$(cat "$pidf" 2>/dev/null || true)
	if [ -n "$pid" ] && alive "$pid" && [[ $(args_of "$pid") == *redis-server* ]]; then
		say "redis $name (pid $pid) does not answer on 127.0.0.1:$port: run make stop-local first"
		exit 1
	fi
	rm -f "$pidf"
	mkdir -p "$RUN/redis-$name"
	for try in $(seq 20); do
		if [ "$try" -gt 1 ] || [ -z "$port" ]; then port=$(random_port); fi
		listening "$port" && continue
		# The pid file appears once the server listens; the port is ours
		# when the server on it reports that pid.
		# DEBUG is allowed from loopback (local): docs/experiments/03-redis-outage.md
		# takes the cache Redis away with redis-cli -u "$REDIS_URL" DEBUG SLEEP 30.
		redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$RUN/redis-$name" \
			--enable-debug-command local --daemonize yes --pidfile "$pidf" --logfile "$RUN/redis-$name.log"
		for _ in $(seq 50); do
			pid=$(cat "$pidf" 2>/dev/null || true)
			if [ -n "$pid" ] && [ "$(redis_pid "$port")" = "$pid" ]; then
				echo "$port" >"$portf"
				say "redis $name: started on 127.0.0.1:$port (pid $pid)"
				return
			fi
			sleep 0.1
		done
	done
	say "redis $name: could not start one (see $RUN/redis-$name.log)"
	exit 1
}

# stop_redis stops the Redis recorded as $1 if it is still that server.
stop_redis() {
	local name=$1 pid port
	pid=$(cat "$RUN/redis-$name.pid" 2>/dev/null || true)
	port=$(cat "$RUN/redis-$name.port" 2>/dev/null || true)
	[ -n "$pid" ] || return 0
	# A paused or hung server does not answer: its command line names its port.
	if redis_ours "$name" || { [ -n "$port" ] && alive "$pid" && [[ $(args_of "$pid") == *redis-server*":$port"* ]]; }; then
		end_process "redis $name" "$pid"
	elif alive "$pid"; then
		say "redis $name: pid $pid is no longer the Redis on 127.0.0.1:$port: left alone"
	fi
	rm -f "$RUN/redis-$name.pid"
}

# api_ours reports whether process $1 is the API this script started from
# $RUN/api (an older version of this script started it as .run/api).
api_ours() {
	local args
	alive "$1" || return 1
	args=$(args_of "$1")
	[ "$args" = "$RUN/api" ] || { [ "$RUN" = "$root/.run" ] && [ "$args" = ".run/api" ]; }
}

# keep_running reports whether process $2, which this script started as $1,
# runs what stamp $3 describes (binary checksum on its first line, then its
# settings; recorded in $RUN/$1.stamp): then it is kept. Otherwise it is
# stopped, for its caller to start a new one.
keep_running() {
	local name=$1 pid=$2 stamp=$3 old why
	old=$(cat "$RUN/$name.stamp" 2>/dev/null || true)
	if [ "$stamp" = "$old" ]; then
		say "$name: already running (pid $pid), same binary and settings"
		return 0
	fi
	why="its settings changed"
	[ "$(head -n1 <<<"$stamp")" = "$(head -n1 <<<"$old")" ] || why="its binary changed"
	say "$name: $why: restarting it"
	end_process "$name" "$pid"
	return 1
}

# start_api (re)starts the API unless the recorded one runs the binary just
# built with the same settings.
start_api() {
	local pid stamp
	stamp=$(printf 'binary sha256 %s\n' "$(checksum "$RUN/api")"; cat "$RUN/env")
	pid=$(cat "$RUN/api.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && api_ours "$pid" && keep_running api "$pid" "$stamp"; then
		return
	fi
	nohup "$RUN/api" >"$RUN/api.out" 2>"$RUN/api.log" &
	pid=$!
	echo "$pid" >"$RUN/api.pid"
	printf '%s\n' "$stamp" >"$RUN/api.stamp"
	wait_ready api "$pid" "$HTTP_ADDR"
}

# wait_ready waits until the API process $2 (named $1; its output in
# $RUN/$1.out and .log) listens on $3 and answers /readyz there. Ready only
# once this process listens: another server on the address answering
# /readyz does not count.
wait_ready() {
	local name=$1 pid=$2 addr=$3
	for _ in $(seq 300); do
		alive "$pid" || { say "the $name exited; see $RUN/$name.log"; tail -n 5 "$RUN/$name.log" >&2; exit 1; }
		grep -q 'listening on' "$RUN/$name.out" && break
		sleep 0.1
	done
	for _ in $(seq 100); do
		curl -fsS "http://$addr/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "http://$addr/readyz" >/dev/null || { say "the $name did not become ready; see $RUN/$name.log"; exit 1; }
	say "$name: started on $addr (pid $pid)"
}

# start_near (local.sh near) runs a second API beside the stack's on
# NEAR_HTTP_ADDR, with the stack's settings and the near cache on
# (NEAR_CACHE=true), for experiment 5 (make experiment-near), which
# compares the two; one already running is replaced. stop ends it too.
start_near() {
	local pid
	[ -f "$RUN/env" ] && [ -x "$RUN/api" ] || { say "no stack is recorded in $RUN: make run-local first"; exit 1; }
	stop_near
	(
		set -a
		. "$RUN/env"
		set +a
		export HTTP_ADDR=$NEAR_HTTP_ADDR NEAR_CACHE=true MIGRATE=false
		exec "$RUN/api"
	) >"$RUN/api-near.out" 2>"$RUN/api-near.log" &
	pid=$!
	echo "$pid" >"$RUN/api-near.pid"
	wait_ready api-near "$pid" "$NEAR_HTTP_ADDR"
}

# stop_near stops the API start_near started.
stop_near() {
	local pid
	pid=$(cat "$RUN/api-near.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && api_ours "$pid"; then end_process api-near "$pid"; fi
	rm -f "$RUN/api-near.pid"
}

# jaeger_ours reports whether process $1 is the Jaeger this script started:
# its command line gives the OTLP receiver the recorded port.
jaeger_ours() {
	local port
	alive "$1" || return 1
	port=$(cat "$RUN/jaeger-otlp.port" 2>/dev/null) || return 1
	[[ $(args_of "$1") == *jaeger*"--config=file:"*"--set=receivers.otlp.protocols.http.endpoint=127.0.0.1:$port"* ]]
}

# stop_jaeger stops the Jaeger this script started (after the API, which
# flushes its last spans as it stops).
stop_jaeger() {
	local pid
	pid=$(cat "$RUN/jaeger.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && jaeger_ours "$pid"; then end_process jaeger "$pid"; fi
	rm -f "$RUN/jaeger.pid" "$RUN/jaeger.stamp"
}

# start_jaeger runs Jaeger (see JAEGER at the top) on deploy/jaeger/local.yaml,
# its OTLP/HTTP receiver and query service on free loopback ports (the
# recorded ones first), reusing the recorded one when it runs the same binary
# and configuration. It sets JAEGER_OTLP_URL and JAEGER_URL, empty when no
# Jaeger runs.
start_jaeger() {
	local pid stamp otlp ui try
	JAEGER_OTLP_URL="" JAEGER_URL=""
	if [ "$JAEGER" = 0 ]; then
		stop_jaeger
		return
	fi
	if [ "$JAEGER" = 1 ]; then
		say "jaeger: make jaeger (a few minutes the first time, seconds after)"
		make -C "$root" --no-print-directory jaeger JAEGER_BIN="$JAEGER_BIN"
	fi
	if [ ! -x "$JAEGER_BIN" ]; then
		stop_jaeger
		say "jaeger: not built, so no traces (make jaeger once, a few minutes the first time; then make run-local again)"
		return
	fi
	otlp=$(cat "$RUN/jaeger-otlp.port" 2>/dev/null || true)
	ui=$(cat "$RUN/jaeger-ui.port" 2>/dev/null || true)
	stamp=$(printf 'binary sha256 %s\nconfig sha256 %s\n' "$(checksum "$JAEGER_BIN")" "$(checksum "$JAEGER_CONFIG")")
	pid=$(cat "$RUN/jaeger.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && jaeger_ours "$pid" && [ -n "$ui" ] && keep_running jaeger "$pid" "$stamp"; then
		JAEGER_OTLP_URL="http://127.0.0.1:$otlp" JAEGER_URL="http://127.0.0.1:$ui"
		return
	fi
	rm -f "$RUN/jaeger.pid"
	for try in $(seq 10); do
		if [ "$try" -gt 1 ] || [ -z "$otlp" ] || [ -z "$ui" ]; then otlp=$(random_port) ui=$(random_port); fi
		if [ "$otlp" = "$ui" ] || listening "$otlp" || listening "$ui"; then
			otlp="" # taken: others
			continue
		fi
		nohup "$JAEGER_BIN" --config=file:"$JAEGER_CONFIG" \
			--set=receivers.otlp.protocols.http.endpoint="127.0.0.1:$otlp" \
			--set=extensions.jaeger_query.http.endpoint="127.0.0.1:$ui" >"$RUN/jaeger.log" 2>&1 &
		pid=$!
		# Ready once both listen (the receiver starts after the query
		# service) while the process lives.
		for _ in $(seq 300); do
			alive "$pid" || break
			if listening "$otlp" && curl -fsS "http://127.0.0.1:$ui/api/services" >/dev/null 2>&1; then
				echo "$pid" >"$RUN/jaeger.pid"
				echo "$otlp" >"$RUN/jaeger-otlp.port"
				echo "$ui" >"$RUN/jaeger-ui.port"
				printf '%s\n' "$stamp" >"$RUN/jaeger.stamp"
				JAEGER_OTLP_URL="http://127.0.0.1:$otlp" JAEGER_URL="http://127.0.0.1:$ui"
				say "jaeger: started, OTLP/HTTP on $JAEGER_OTLP_URL, query and UI on $JAEGER_URL (pid $pid)"
				return
			fi
			sleep 0.1
		done
		if alive "$pid"; then
			end_process jaeger "$pid"
			say "jaeger did not become ready in 30s; see $RUN/jaeger.log"
			exit 1
		fi
		# A port taken since the check is worth another try; anything else
		# is not.
		grep -q 'address already in use' "$RUN/jaeger.log" || break
	done
	say "jaeger: could not start it; see $RUN/jaeger.log"
	tail -n 5 "$RUN/jaeger.log" >&2
	exit 1
}

# prometheus_config prints deploy/prometheus.yml for this stack: the compose
# host names become the local addresses and the rule file its path in the
# checkout. Without DEMO=1 no load generator runs but the experiments' (on
# LOADGEN_ADDR, when one runs), so its target is labelled optional="true",
# which StampedeTargetDown leaves out. It fails when the file no longer has
# the shape it rewrites.
prometheus_config() {
	local src=deploy/prometheus.yml out optional=""
	[ "$DEMO" = 1 ] || optional='\n        labels: {optional: "true"} # no demo load: an experiment'"'"'s loadgen, when one runs'
	out=$(sed -e "s|\[api-1:8080, api-2:8080\]|[$HTTP_ADDR]|" \
		-e "s|\[loadgen:9102\]|[$LOADGEN_ADDR]$optional|" \
		-e "s|/etc/prometheus/rules/alerts.yml|$PWD/deploy/rules/alerts.yml|" "$src")
	for want in "[$HTTP_ADDR]" "[$LOADGEN_ADDR]" "$PWD/deploy/rules/alerts.yml"; do
		grep -qF -- "$want" <<<"$out" || { echo "local.sh: $src no longer has the targets or rule_files it rewrites ($want)" >&2; return 1; }
	done
	printf '%s\n' "$out"
}

# prometheus_ours reports whether process $1 is the Prometheus this script
# started (an older version of this script gave it .run/prometheus.yml).
prometheus_ours() {
	local args
	alive "$1" || return 1
	args=$(args_of "$1")
	[[ $args == *prometheus*"--config.file=$RUN/prometheus.yml"* ]] ||
		{ [ "$RUN" = "$root/.run" ] && [[ $args == *prometheus*"--config.file=.run/prometheus.yml"* ]]; }
}

# start_prometheus runs Prometheus on PROMETHEUS_ADDR when it is installed
# (Debian: apt-get install prometheus), scraping the API and loadgen. It sets
# PROMETHEUS_DID to what it did, for the banner, and PROMETHEUS_OURS to 1 when
# the Prometheus on PROMETHEUS_ADDR is this script's.
start_prometheus() {
	local pid
	PROMETHEUS_OURS=0
	if ! command -v prometheus >/dev/null; then
		PROMETHEUS_DID="not installed: no metrics history (apt-get install prometheus, then make run-local again)"
		say "prometheus is not installed: no metrics history (apt-get install prometheus, then make run-local again)"
		return
	fi
	prometheus_config >"$RUN/prometheus.yml.new"
	pid=$(cat "$RUN/prometheus.pid" 2>/dev/null || true)
	# One an older version of this script started without exemplar storage
	# is replaced (a reload does not change flags).
	if [ -n "$pid" ] && prometheus_ours "$pid" && [[ $(args_of "$pid") != *" $PROMETHEUS_FEATURES"* ]]; then
		say "prometheus: running without $PROMETHEUS_FEATURES: restarting it"
		end_process prometheus "$pid"
	fi
	if [ -n "$pid" ] && prometheus_ours "$pid"; then
		if ! cmp -s "$RUN/prometheus.yml.new" "$RUN/prometheus.yml"; then
			mv "$RUN/prometheus.yml.new" "$RUN/prometheus.yml"
			kill -HUP "$pid" # reloads the configuration
			say "prometheus: already running (pid $pid), configuration reloaded"
			PROMETHEUS_DID="already running (pid $pid), configuration reloaded"
		else
			rm -f "$RUN/prometheus.yml.new"
			say "prometheus: already running (pid $pid)"
			PROMETHEUS_DID="already running (pid $pid)"
		fi
		PROMETHEUS_OURS=1
		return
	fi
	rm -f "$RUN/prometheus.pid"
	if curl -fsS "http://$PROMETHEUS_ADDR/-/ready" >/dev/null 2>&1; then
		rm -f "$RUN/prometheus.yml.new"
		say "prometheus: one this script did not start answers on $PROMETHEUS_ADDR: using it"
		PROMETHEUS_DID="not started: one this script did not start answers here (it may not scrape this API)"
		return
	fi
	mv "$RUN/prometheus.yml.new" "$RUN/prometheus.yml"
	nohup prometheus --config.file="$RUN/prometheus.yml" --storage.tsdb.path="$RUN/prometheus-data" \
		--web.listen-address="$PROMETHEUS_ADDR" "$PROMETHEUS_FEATURES" >"$RUN/prometheus.log" 2>&1 &
	echo $! >"$RUN/prometheus.pid"
	say "prometheus: started on $PROMETHEUS_ADDR (config $RUN/prometheus.yml)"
	PROMETHEUS_DID="started (pid $!)"
	PROMETHEUS_OURS=1
}

# wait_scraped waits (up to 30s) until the Prometheus this script runs has
# scraped the API once, so that a query right after make run-local finds the
# API's metrics; it adds the outcome to PROMETHEUS_DID.
wait_scraped() {
	local q="http://$PROMETHEUS_ADDR/api/v1/query?query=up%7Bjob%3D%22api%22%7D"
	[ "$PROMETHEUS_OURS" = 1 ] || return 0
	for _ in $(seq 300); do
		if curl -fsS "$q" 2>/dev/null | grep -q '"value"'; then
			PROMETHEUS_DID="$PROMETHEUS_DID, has scraped the API"
			return
		fi
		sleep 0.1
	done
	PROMETHEUS_DID="$PROMETHEUS_DID, has not scraped the API yet (see $RUN/prometheus.log; queries answer an empty result until it does)"
	say "prometheus: no scrape of the API within 30s; see $RUN/prometheus.log"
}

# stop_prometheus stops the Prometheus this script started.
stop_prometheus() {
	local pid
	pid=$(cat "$RUN/prometheus.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && prometheus_ours "$pid"; then end_process prometheus "$pid"; fi
	rm -f "$RUN/prometheus.pid"
}

# loadgen_ours reports whether process $1 is the load generator this script
# started from $RUN/loadgen.
loadgen_ours() {
	alive "$1" && [[ $(args_of "$1") == "$RUN/loadgen "* ]]
}

# stop_loadgen stops the load generator this script started (the demo cancels
# its open reservations as it stops).
stop_loadgen() {
	local pid
	pid=$(cat "$RUN/loadgen.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && loadgen_ours "$pid"; then end_process loadgen "$pid"; fi
	rm -f "$RUN/loadgen.pid" "$RUN/loadgen.stamp"
}

# start_loadgen runs the demo mix against the API when DEMO=1 (restarting it
# when its binary or settings changed), and stops it otherwise.
start_loadgen() {
	local pid stamp products args=()
	if [ "$DEMO" != 1 ]; then
		stop_loadgen
		return
	fi
	# The catalog's size at SCALE (internal/seed: products = round(25,000 x
	# scale), categories = min(40, products)): reads past it would be 404s.
	products=$(awk -v s="${SCALE:-1}" 'BEGIN { p = int(25000 * s + 0.5); print (p < 1 ? 1 : p) }')
	if [ "$products" -lt 4 ]; then
		say "DEMO=1 needs a catalog of at least 4 products (SCALE >= 0.00014)"
		exit 2
	fi
	args=(-target "http://$HTTP_ADDR" -metrics-addr "$LOADGEN_ADDR" -duration 0
		-products "$products" -categories $((products < 40 ? products : 40)) demo)
	go build -o "$RUN/loadgen" ./cmd/loadgen
	stamp=$(printf 'binary sha256 %s\n' "$(checksum "$RUN/loadgen")"; printf '%s\n' "${args[@]}"; cat "$RUN/env")
	pid=$(cat "$RUN/loadgen.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && loadgen_ours "$pid" && keep_running loadgen "$pid" "$stamp"; then
		return
	fi
	if listening "${LOADGEN_ADDR##*:}" && [[ $LOADGEN_ADDR == 127.0.0.1:* ]]; then
		say "loadgen: something else listens on $LOADGEN_ADDR: stop it or set LOADGEN_ADDR"
		exit 1
	fi
	# ADMIN_TOKEN comes from the environment (not the command line).
	nohup "$RUN/loadgen" "${args[@]}" >"$RUN/loadgen.log" 2>&1 &
	pid=$!
	echo "$pid" >"$RUN/loadgen.pid"
	printf '%s\n' "$stamp" >"$RUN/loadgen.stamp"
	for _ in $(seq 100); do
		alive "$pid" || { say "loadgen exited; see $RUN/loadgen.log"; tail -n 5 "$RUN/loadgen.log" >&2; exit 1; }
		curl -fsS "http://$LOADGEN_ADDR/metrics" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "http://$LOADGEN_ADDR/metrics" >/dev/null || { say "loadgen does not serve $LOADGEN_ADDR/metrics; see $RUN/loadgen.log"; exit 1; }
	say "loadgen: demo mix started against $HTTP_ADDR, metrics on http://$LOADGEN_ADDR/metrics (pid $pid)"
}

# stop_legacy stops the Redis servers an older version of this script started
# on fixed ports (recorded as .run/cache.pid and .run/lockN.pid).
stop_legacy() {
	local f pid
	for f in "$RUN"/cache.pid "$RUN"/lock{1,2,3}.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		if alive "$pid" && [[ $(args_of "$pid") == *redis-server* ]]; then end_process "redis $(basename "$f" .pid) (old fixed port)" "$pid"; fi
		rm -f "$f"
	done
}

# stop ends what start started, as recorded in $RUN, and nothing else.
stop() {
	local pid i
	stop_loadgen # first: it would count the API's absence as errors
	stop_near
	pid=$(cat "$RUN/api.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && api_ours "$pid"; then end_process api "$pid"; fi
	rm -f "$RUN/api.pid" "$RUN/api.stamp"
	stop_jaeger
	stop_prometheus
	for ((i = ${#REDIS_NAMES[@]} - 1; i >= 0; i--)); do stop_redis "${REDIS_NAMES[i]}"; done
	stop_legacy
	rm -f "$RUN/env"
}

# start brings the stack up, reusing what still runs (see the top of the file).
start() {
	command -v redis-server >/dev/null || { say "redis-server is not installed (apt-get install redis-server)"; exit 1; }
	command -v pg_isready >/dev/null || { say "Postgres client tools are not installed (apt-get install postgresql)"; exit 1; }
	[[ $DB_NAME =~ ^[a-z_][a-z0-9_]*$ ]] || { say "DB_NAME=$DB_NAME: want a lower-case SQL identifier"; exit 2; }
	if ! pg_isready -q -h 127.0.0.1 -p 5432; then
		say "no Postgres answers on 127.0.0.1:5432: start one (as on CI: pg_ctlcluster <version> main start)"
		exit 1
	fi
	mkdir -p "$RUN"
	stop_legacy
	local name lock=()
	for name in "${REDIS_NAMES[@]}"; do start_redis "$name"; done
	for name in "${REDIS_NAMES[@]:1}"; do lock+=("redis://127.0.0.1:$(cat "$RUN/redis-$name.port")"); done
	start_jaeger

	psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'" | grep -q 1 ||
		psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB_NAME"
	export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB_NAME?sslmode=disable"
	export REDIS_URL="redis://127.0.0.1:$(cat "$RUN/redis-cache.port")"
	export LOCK_REDIS_URLS
	LOCK_REDIS_URLS=$(IFS=,; echo "${lock[*]}")
	export ADMIN_TOKEN="${ADMIN_TOKEN:-local-admin}"
	export HTTP_ADDR
	# The API's traces go to our Jaeger; without one, to whatever the
	# environment says (nothing, or a collector of the user's).
	[ -z "$JAEGER_OTLP_URL" ] || export OTEL_EXPORTER_OTLP_ENDPOINT="$JAEGER_OTLP_URL"
	# The addresses, for users and tools: set -a; . .run/env; set +a. The
	# API is restarted when this file changes.
	{
		echo "# the stack make run-local started (scripts/local.sh)"
		echo "HTTP_ADDR=$HTTP_ADDR"
		echo "DATABASE_URL=$DATABASE_URL"
		echo "REDIS_URL=$REDIS_URL"
		echo "LOCK_REDIS_URLS=$LOCK_REDIS_URLS"
		printf 'ADMIN_TOKEN=%q\n' "$ADMIN_TOKEN"
		[ -z "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ] || printf 'OTEL_EXPORTER_OTLP_ENDPOINT=%q\n' "$OTEL_EXPORTER_OTLP_ENDPOINT"
		[ -z "${TRACE_SAMPLE:-}" ] || printf 'TRACE_SAMPLE=%q\n' "$TRACE_SAMPLE"
		[ -z "$JAEGER_URL" ] || echo "JAEGER_URL=$JAEGER_URL"
		echo "PROMETHEUS_URL=http://$PROMETHEUS_ADDR"
		# loadgen's defaults: the API to load, and its own /metrics on the
		# address this stack's Prometheus scrapes.
		echo "LOADGEN_TARGET=http://$HTTP_ADDR"
		echo "LOADGEN_METRICS_ADDR=$LOADGEN_ADDR"
	} >"$RUN/env"

	go build -o "$RUN/api" ./cmd/api
	"$RUN/api" seed -scale "${SCALE:-1}"
	start_api
	start_prometheus
	wait_scraped
	start_loadgen
	local demo="off (DEMO=1 runs the compose demo's load mix)"
	[ "$DEMO" != 1 ] || demo="http://$LOADGEN_ADDR/metrics   (log $RUN/loadgen.log; POST /demo/pause, /demo/resume)"
	local prometheus="$PROMETHEUS_DID"
	[ "$PROMETHEUS_OURS" != 1 ] || prometheus="$PROMETHEUS_DID; scrapes the API and loadgen -metrics-addr $LOADGEN_ADDR; exemplars on"
	local jaeger="off (make jaeger once, then make run-local again)"
	[ "$JAEGER" != 0 ] || jaeger="off (JAEGER=0)"
	[ -z "$JAEGER_URL" ] || jaeger="$JAEGER_URL   (query API: /api/traces/<trace id>, /api/services; the API sends to $JAEGER_OTLP_URL)"
	cat <<EOT
run-local: up.
  API          http://$HTTP_ADDR   (try /v1/categories/1/stats, /openapi.yaml, /metrics)
  admin token  $ADMIN_TOKEN   (curl -H "Authorization: Bearer $ADMIN_TOKEN" http://$HTTP_ADDR/admin/caches)
  Postgres     $DATABASE_URL
  Redis        cache $REDIS_URL
               lock  $LOCK_REDIS_URLS
  addresses    $RUN/env   (set -a; . $RUN/env; set +a)
  Jaeger       $jaeger
  Prometheus   http://$PROMETHEUS_ADDR   ($prometheus)
  demo load    $demo
  logs         $RUN/api.log, $RUN/redis-*.log${JAEGER_URL:+, $RUN/jaeger.log}
  stop         make stop-local${RUN_DIR:+   (with RUN_DIR=$RUN)}
EOT
}

case "${1:-}" in
start) start ;;
stop) stop ;;
prometheus-config) prometheus_config ;;
near) start_near ;;
*) echo "usage: $0 start|stop|near|prometheus-config" >&2; exit 2 ;;
esac
