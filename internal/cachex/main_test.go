package cachex

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// quiet drops go-redis's log lines: the tests kill servers on purpose, and
// every refused dial would be printed.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// TestMain runs the tests with go-redis's log silenced, and the runnable
// Examples against a private redis-server (redistest.RunExamples).
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(redistest.RunExamples(m))
}
