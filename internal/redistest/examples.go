package redistest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// ExampleAddrEnv names the environment variable that holds the address of
// the server RunExamples starts for a package's runnable Examples.
const ExampleAddrEnv = "REDISTEST_EXAMPLE_ADDR"

// RunExamples runs m, from a package's TestMain, with a private redis-server
// for its runnable Examples (they cannot take a testing.TB): its address is
// in the environment as ExampleAddrEnv, and it is killed when m ends, so
// Examples never touch a Redis the user runs. Under -short, which promises
// a run without servers, it starts none and skips the Examples. It returns
// m.Run's exit code.
func RunExamples(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		if flag.Lookup("test.run").Value.String() == "" {
			_ = flag.Set("test.run", "^(Test|Fuzz)")
		}
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "redistest-examples")
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s, err := Start(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redistest: a server for the Examples:", err)
		return 1
	}
	defer s.Close()
	if err := os.Setenv(ExampleAddrEnv, s.Addr()); err != nil {
		fmt.Fprintln(os.Stderr, "redistest:", err)
		return 1
	}
	return m.Run()
}
