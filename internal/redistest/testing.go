package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TB is what New needs of a test; testing.TB has it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
}

// New starts a Server for the test: it skips the test under go test -short,
// fails it when redis-server cannot start (saying what to install), and
// kills the server when the test ends.
func New(tb TB, extra ...string) *Server {
	tb.Helper()
	if _, test := tb.(testing.TB); test && testing.Short() {
		tb.Skipf("redistest: needs a redis-server; skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, tb.TempDir(), extra...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Client returns a new client of s (Server.Options: ContextTimeoutEnabled,
// so cachex.New and lockx.New accept it) with options changed by opts,
// closed when the test ends.
func Client(tb TB, s *Server, opts ...func(*redis.Options)) *redis.Client {
	o := s.Options()
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Must fails the test if err is not nil: redistest.Must(t, srv.Pause()).
func Must(tb TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
}

// Key returns a key prefix unique to the test and the run, "name:hex:": a
// test that meets a server others use, or its own earlier run's keys, never
// reads them.
func Key(tb interface{ Name() string }) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return tb.Name() + ":" + hex.EncodeToString(b) + ":"
}
