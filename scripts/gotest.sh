#!/usr/bin/env bash
# go test ARGS..., then the time each package took, slowest first (make test,
# make test-under-load). go test's output passes through unchanged, failures
# included, and the script exits with go test's status.
#
#   bash scripts/gotest.sh -race -count=1 ./...      (GO=go by default)
set -uo pipefail

out=$(mktemp)
trap 'rm -f "$out"' EXIT

"${GO:-go}" test "$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}

# A package's result line: "ok  <tab>path<tab>1.234s" or "FAIL<tab>path<tab>1.234s"
# (a package that did not build has no time and is left out).
times=$(awk -F'\t' '($1 == "ok  " || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ {
	printf "%8.1fs  %-4s  %s\n", $3 + 0, $1, $2
}' "$out" | sort -rn)
if [ -n "$times" ]; then
	echo
	echo "package times, slowest first:"
	echo "$times"
fi
exit "$status"
