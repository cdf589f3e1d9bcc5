package lockx

import (
	"flag"
	"os"
	"testing"
)

// TestMain skips the runnable examples under -short: they talk to the Redis at
// REDIS_URL (or 127.0.0.1:6379), and -short promises a run without servers.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() && flag.Lookup("test.run").Value.String() == "" {
		_ = flag.Set("test.run", "^(Test|Fuzz)")
	}
	os.Exit(m.Run())
}
