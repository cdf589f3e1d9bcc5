#!/usr/bin/env bash
# make test-under-load: runs the tests as make test does (scripts/gotest.sh),
# COUNT times, with CPU hogs beside them: one busy process per core (nproc),
# at the tests' own priority, started before the first run and ended after
# the last, on failure and on Ctrl-C too. It shows what a busy machine (a
# laptop running other work, a shared CI runner) does to the suite. Prints a
# line per run (pass or FAIL, duration) and exits non-zero when a run failed.
# Runs go test in the current directory (make runs it in the repository).
#
#   PKG=./internal/lockx COUNT=5 bash scripts/test-under-load.sh
#
# PKG (default ./...; make passes make test's list) the packages or patterns, COUNT (default 1) the number of
# runs, TESTFLAGS (default make test's) go test's flags.
set -euo pipefail

pkg=${PKG:-./...}
read -ra pkgs <<<"$pkg" # one or more packages or patterns
count=${COUNT:-1}
read -r -a flags <<<"${TESTFLAGS:--race -count=1 -timeout 9m}"
gotest=$(dirname "$0")/gotest.sh
log() { printf 'test-under-load: %s\n' "$*"; }
if ! [[ $count =~ ^[1-9][0-9]*$ ]]; then
	log "COUNT must be a whole number of runs, 1 or more (got '$count')"
	exit 2
fi

# shellcheck source=hogs.sh
. "$(dirname "$0")/hogs.sh"
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start_hogs "the tests"
cores=$(nproc)

results=()
failed=0
for ((run = 1; run <= count; run++)); do
	log "run $run of $count: go test ${flags[*]} $pkg"
	start=$SECONDS
	result=pass
	bash "$gotest" "${flags[@]}" "${pkgs[@]}" || result=FAIL
	[ "$result" = pass ] || failed=$((failed + 1))
	results+=("run $run of $count: $result in $((SECONDS - start))s")
	log "${results[-1]}"
done

echo
for r in "${results[@]}"; do log "$r"; done
log "$((count - failed)) of $count runs passed under $cores hogs"
((failed == 0))
