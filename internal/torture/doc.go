// Package torture is a seeded fault-injection checker for lockx, cachex and
// the catalog's reservations, run by cmd/torture and by its tests. It starts real servers (internal/testenv),
// puts an in-process fault proxy (toxiproxy) between every client and every
// Redis, runs workloads while a schedule generated from a seed injects
// faults, records every operation, and checks the recorded history for
// anomalies afterwards. The same seed gives the same schedule; docs/torture.md
// says what is checked and how to rerun a failure.
package torture
