#!/usr/bin/env bash
# Runs a command beside CPU hogs (scripts/hogs.sh: one busy process per core),
# started before it and ended after it, on failure and on Ctrl-C too, and
# exits with the command's status. make experiments-busy runs the guided
# experiments this way.
#
#   bash scripts/with-hogs.sh make experiments
set -euo pipefail
log() { printf 'with-hogs: %s\n' "$*"; }
if (($# == 0)); then
	log "usage: $0 command [args...]"
	exit 2
fi
# shellcheck source=hogs.sh
. "$(dirname "$0")/hogs.sh"
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start_hogs "$1"
status=0
"$@" || status=$?
log "$1 exited $status"
exit "$status"
