#!/usr/bin/env bash
# The whole stack from local binaries, without Docker: make run-local / make stop-local.
# Reuses a running Postgres (127.0.0.1:5432, user postgres) and Redis (127.0.0.1:6379),
# starts three private Redis servers for the Redlock quorum, migrates, seeds and
# starts the API on :8080 and, when installed, Prometheus on :9090. Everything it starts
# is recorded in .run/ and stopped by "stop".
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=.run
mkdir -p "$RUN"
say() { printf 'run-local: %s\n' "$*"; }

stop() {
	shopt -s nullglob
	for f in "$RUN"/*.pid; do
		pid=$(cat "$f")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" && say "stopped $(basename "$f" .pid) (pid $pid)"
		fi
		rm -f "$f"
	done
}

start_redis() { # name port
	local name=$1 port=$2
	if redis-cli -p "$port" ping >/dev/null 2>&1; then
		say "redis $name: reusing 127.0.0.1:$port"
		return
	fi
	mkdir -p "$RUN/$name"
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$RUN/$name" \
		--daemonize yes --pidfile "$PWD/$RUN/$name.pid" --logfile "$PWD/$RUN/$name.log"
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	say "redis $name: started on 127.0.0.1:$port"
}

# prometheus_config prints deploy/prometheus.yml for this stack: the compose
# host names become the local addresses and the rule file its path in the
# checkout. It fails when the file no longer has the shape it rewrites.
prometheus_config() {
	local src=deploy/prometheus.yml out
	out=$(sed -e 's|\[api-1:8080, api-2:8080\]|[127.0.0.1:8080]|' \
		-e 's|\[loadgen:9102\]|[127.0.0.1:9102]|' \
		-e "s|/etc/prometheus/rules/alerts.yml|$PWD/deploy/rules/alerts.yml|" "$src")
	for want in '[127.0.0.1:8080]' '[127.0.0.1:9102]' "$PWD/deploy/rules/alerts.yml"; do
		grep -qF -- "$want" <<<"$out" || { echo "local.sh: $src no longer has the targets or rule_files it rewrites ($want)" >&2; return 1; }
	done
	printf '%s\n' "$out"
}

# start_prometheus runs Prometheus on 127.0.0.1:9090 when it is installed
# (Debian: apt-get install prometheus), scraping the API and loadgen.
start_prometheus() {
	if ! command -v prometheus >/dev/null; then
		say "prometheus is not installed: no metrics history (apt-get install prometheus, then make run-local again)"
		return
	fi
	if curl -fsS http://127.0.0.1:9090/-/ready >/dev/null 2>&1; then
		say "prometheus: reusing 127.0.0.1:9090"
		return
	fi
	prometheus_config >"$RUN/prometheus.yml"
	nohup prometheus --config.file="$RUN/prometheus.yml" --storage.tsdb.path="$RUN/prometheus-data" \
		--web.listen-address=127.0.0.1:9090 >"$RUN/prometheus.log" 2>&1 &
	echo $! >"$RUN/prometheus.pid"
	say "prometheus: started on 127.0.0.1:9090 (config $RUN/prometheus.yml)"
}

start() {
	command -v redis-server >/dev/null || { say "redis-server is not installed (apt-get install redis-server)"; exit 1; }
	command -v pg_isready >/dev/null || { say "Postgres client tools are not installed (apt-get install postgresql)"; exit 1; }
	if ! pg_isready -q -h 127.0.0.1 -p 5432; then
		say "no Postgres answers on 127.0.0.1:5432: start one (as on CI: pg_ctlcluster <version> main start)"
		exit 1
	fi
	start_redis cache 6379
	for i in 1 2 3; do start_redis "lock$i" $((7000 + i)); done

	psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'stampede'" | grep -q 1 ||
		psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE stampede"
	export DATABASE_URL="postgres://postgres@127.0.0.1:5432/stampede?sslmode=disable"
	export REDIS_URL="redis://127.0.0.1:6379"
	export LOCK_REDIS_URLS="redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003"
	export ADMIN_TOKEN="${ADMIN_TOKEN:-local-admin}"
	export HTTP_ADDR="${HTTP_ADDR:-127.0.0.1:8080}"

	go build -o "$RUN/api" ./cmd/api
	"$RUN/api" seed -scale "${SCALE:-1}"
	if [ -f "$RUN/api.pid" ] && kill -0 "$(cat "$RUN/api.pid")" 2>/dev/null; then
		say "api already running (pid $(cat "$RUN/api.pid"))"
	else
		nohup "$RUN/api" >"$RUN/api.out" 2>"$RUN/api.log" &
		echo $! >"$RUN/api.pid"
	fi
	for _ in $(seq 100); do
		curl -fsS "http://$HTTP_ADDR/readyz" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "http://$HTTP_ADDR/readyz" >/dev/null || { say "the api did not become ready; see $RUN/api.log"; exit 1; }
	start_prometheus
	cat <<EOT
run-local: up.
  API          http://$HTTP_ADDR   (try /v1/categories/1/stats, /openapi.yaml, /metrics)
  admin token  $ADMIN_TOKEN   (curl -H "Authorization: Bearer $ADMIN_TOKEN" http://$HTTP_ADDR/admin/caches)
  Postgres     $DATABASE_URL
  Redis        cache $REDIS_URL, lock $LOCK_REDIS_URLS
  Prometheus   http://127.0.0.1:9090   (if installed; scrapes the API and loadgen -metrics-addr 127.0.0.1:9102)
  logs         $RUN/api.log
  stop         make stop-local
EOT
}

case "${1:-}" in
start) start ;;
stop) stop ;;
prometheus-config) prometheus_config ;;
*) echo "usage: $0 start|stop|prometheus-config" >&2; exit 2 ;;
esac
