#!/usr/bin/env bash
# Smoke test of a running demo (docker compose up, or make run-local DEMO=1):
#   - every API answers GET /readyz with 200;
#   - the load generator serves /metrics and loadgen_requests_total grows;
#   - Prometheus has active targets of jobs api and loadgen, all up;
#   - unless SMOKE_JAEGER=0, Jaeger lists service stampede-api: the APIs'
#     traces arrive;
#   - unless SMOKE_GRAFANA=0, Grafana lists every dashboard of
#     dashboards/generated and a panel query through the Prometheus
#     datasource (uid prometheus) returns data.
# Each check is retried until it passes or SMOKE_TIMEOUT seconds (180) after
# the start have passed; then the script exits 1 saying what it last saw.
# Addresses (compose defaults): API_URLS (space-separated), LOADGEN_URL,
# PROM_URL, JAEGER_URL (the query service), GRAFANA_URL. Needs curl and jq.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
API_URLS=${API_URLS:-http://127.0.0.1:8080 http://127.0.0.1:8081}
LOADGEN_URL=${LOADGEN_URL:-http://127.0.0.1:9102}
PROM_URL=${PROM_URL:-http://127.0.0.1:9090}
GRAFANA_URL=${GRAFANA_URL:-http://127.0.0.1:3000}
JAEGER_URL=${JAEGER_URL:-http://127.0.0.1:16686}
SMOKE_GRAFANA=${SMOKE_GRAFANA:-1}
SMOKE_JAEGER=${SMOKE_JAEGER:-1}
SMOKE_TIMEOUT=${SMOKE_TIMEOUT:-180}
# A query of the overview dashboard's request-rate panel.
PANEL_QUERY='sum(rate(http_requests_total[1m]))'

say() { printf 'smoke: %s\n' "$*"; }
for bin in curl jq; do
	command -v "$bin" >/dev/null || { say "FAIL: $bin is not installed (apt-get install curl jq)"; exit 1; }
done
deadline=$((SECONDS + SMOKE_TIMEOUT))

# why is what the last failed check saw; checks set it and return 1. Checks
# and helpers return results in globals (body, total): a $(...) subshell
# would lose why.
why="" body="" total=""

# check runs "$@" until it succeeds (then prints ok: $what) or the deadline
# passes (then prints FAIL with why, and exits 1).
check() {
	local what=$1
	shift
	while :; do
		why=""
		if "$@"; then
			say "ok: $what"
			return
		fi
		if ((SECONDS >= deadline)); then
			say "FAIL: $what: ${why:-failed} (gave up after ${SMOKE_TIMEOUT}s)"
			exit 1
		fi
		sleep 2
	done
}

# get sets body to the body of GET $1, failing (with why set) on a transport
# error or a status other than 2xx.
get() {
	if ! body=$(curl -sS --fail-with-body --max-time 10 "$1" 2>&1); then
		why="GET $1: $(head -c 300 <<<"$body")"
		return 1
	fi
}

api_ready() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1/readyz" || true)
	[ "$code" = 200 ] || { why="GET $1/readyz answered ${code:-nothing} (000: no connection), want 200"; return 1; }
}

# loadgen_total sets total to the sum of loadgen_requests_total over its
# series.
loadgen_total() {
	get "$LOADGEN_URL/metrics" || return 1
	total=$(awk '/^loadgen_requests_total[{ ]/ { sub(/\{.*\}/, ""); s += $2; n++ }
		END { if (n > 0) printf "%.0f\n", s }' <<<"$body")
	[ -n "$total" ] || { why="$LOADGEN_URL/metrics has no loadgen_requests_total series yet"; return 1; }
}

loadgen_running() {
	local a b
	loadgen_total || return 1
	a=$total
	sleep 2
	loadgen_total || return 1
	b=$total
	[ "$b" -gt "$a" ] || { why="loadgen_requests_total did not grow in 2s ($a, then $b): is the demo paused (GET $LOADGEN_URL/demo)?"; return 1; }
}

prometheus_targets() {
	local jobs down
	get "$PROM_URL/api/v1/targets?state=active" || return 1
	jobs=$(jq -r '[.data.activeTargets[].labels.job] | unique | join(" ")' <<<"$body")
	for job in api loadgen; do
		[[ " $jobs " == *" $job "* ]] || { why="no active target of job $job (jobs: ${jobs:-none})"; return 1; }
	done
	down=$(jq -r '.data.activeTargets[] | select(.health != "up") | "\(.labels.job) \(.scrapeUrl) is \(.health) \(.lastError)"' <<<"$body")
	[ -z "$down" ] || { why="targets not up: $(tr '\n' ';' <<<"$down")"; return 1; }
}

jaeger_services() {
	local services
	get "$JAEGER_URL/api/services" || return 1
	services=$(jq -r '(.data // []) | join(" ")' <<<"$body")
	[[ " $services " == *" stampede-api "* ]] ||
		{ why="Jaeger has no traces of service stampede-api yet (services: ${services:-none}); is OTEL_EXPORTER_OTLP_ENDPOINT set on the APIs?"; return 1; }
}

grafana_dashboards() {
	local missing="" uid
	get "$GRAFANA_URL/api/search?type=dash-db&limit=5000" || return 1
	for uid in "${uids[@]}"; do
		jq -e --arg uid "$uid" 'any(.[]; .uid == $uid)' <<<"$body" >/dev/null || missing+=" $uid"
	done
	[ -z "$missing" ] || { why="not listed by /api/search:$missing (listed: $(jq -r '[.[].uid] | join(" ")' <<<"$body"))"; return 1; }
}

grafana_query() {
	local req out
	req=$(jq -n --arg expr "$PANEL_QUERY" '{from: "now-5m", to: "now",
		queries: [{refId: "A", datasource: {type: "prometheus", uid: "prometheus"}, expr: $expr, instant: true, range: false}]}')
	if ! out=$(curl -sS --fail-with-body --max-time 10 -H 'Content-Type: application/json' -d "$req" "$GRAFANA_URL/api/ds/query" 2>&1); then
		why="POST $GRAFANA_URL/api/ds/query: $(head -c 300 <<<"$out")"
		return 1
	fi
	jq -e '.results.A | (.error // "") == "" and ([.frames[]?.data.values[-1][]?] | length > 0)' <<<"$out" >/dev/null ||
		{ why="$PANEL_QUERY returned no data: $(head -c 300 <<<"$out")"; return 1; }
}

for url in $API_URLS; do
	check "API $url ready" api_ready "$url"
done
check "load generator $LOADGEN_URL sending requests" loadgen_running
check "Prometheus $PROM_URL: every target up" prometheus_targets
if [ "$SMOKE_JAEGER" = 0 ]; then
	say "Jaeger skipped (SMOKE_JAEGER=0)"
else
	check "Jaeger $JAEGER_URL has traces of stampede-api" jaeger_services
fi
if [ "$SMOKE_GRAFANA" = 0 ]; then
	say "Grafana skipped (SMOKE_GRAFANA=0)"
else
	uids=()
	for f in "$root"/dashboards/generated/*.json; do uids+=("$(jq -r .uid "$f")"); done
	[ "${#uids[@]}" -gt 0 ] || { say "FAIL: no dashboards in $root/dashboards/generated (make dashboards)"; exit 1; }
	check "Grafana $GRAFANA_URL lists the ${#uids[@]} dashboards" grafana_dashboards
	check "Grafana panel query $PANEL_QUERY returns data" grafana_query
fi
say "passed"
