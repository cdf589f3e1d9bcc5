# CPU hogs for scripts that test or measure on a busy machine: one busy
# process per core (nproc), at the caller's priority. Source this file, define
# log (one line of output), then call start_hogs WHAT and stop_hogs (safe to
# call twice; set it as the EXIT trap). Used by test-under-load.sh and
# with-hogs.sh.
hogs=()

# start_hogs starts one busy process per core and logs their pids, saying
# what they run beside ($1).
start_hogs() {
	local cores i
	cores=$(nproc)
	for ((i = 0; i < cores; i++)); do
		(while :; do :; done) </dev/null >/dev/null 2>&1 &
		hogs+=("$!")
	done
	log "$cores busy processes beside $1 (pids ${hogs[*]})"
}

# stop_hogs ends the hogs start_hogs started, if any.
stop_hogs() {
	if ((${#hogs[@]})); then
		kill "${hogs[@]}" 2>/dev/null || true
		wait "${hogs[@]}" 2>/dev/null || true
		hogs=()
		log "hogs stopped"
	fi
}
