// Package cachebench compares reads through internal/cachex with a plain
// go-redis GET and with github.com/go-redis/cache/v9, on the same private
// Redis, the same client and the same ~1 KiB product document. It holds only
// benchmarks; see docs/benchmarks.md for the figures.
package cachebench
