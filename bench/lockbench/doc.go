// Package lockbench compares acquiring and releasing a lock through
// internal/lockx with a plain SET NX PX lock and with the peer libraries
// github.com/bsm/redislock, github.com/go-redsync/redsync/v4 (on one server
// and on a Redlock quorum of three) and github.com/redis/rueidis/rueidislock,
// on the same private Redis servers. It holds only benchmarks; see
// docs/benchmarks.md for the figures.
package lockbench
