package cachex

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// quiet drops go-redis's log lines: the tests kill servers on purpose, and
// every refused dial would be printed.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// TestMain skips the runnable examples under -short: they talk to the Redis at
// REDIS_URL (or 127.0.0.1:6379), and -short promises a run without servers.
func TestMain(m *testing.M) {
	flag.Parse()
	redis.SetLogger(quiet{})
	if testing.Short() && flag.Lookup("test.run").Value.String() == "" {
		_ = flag.Set("test.run", "^(Test|Fuzz)")
	}
	os.Exit(m.Run())
}
