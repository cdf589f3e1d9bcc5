package testenv

import (
	"fmt"
	"testing"
)

// skipShort skips the test when it runs under go test -short: the one case in
// which a test needing real servers does not run.
func skipShort(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("testenv: %s needs a real server; skipped under -short", what)
	}
}

// missing fails the test with what to install to get the server it needs.
func missing(tb testing.TB, what, install string, tried []string) {
	tb.Helper()
	msg := fmt.Sprintf("testenv: no %s available.\n%s\nTried:", what, install)
	for _, t := range tried {
		msg += "\n  - " + t
	}
	msg += "\n(go test -short skips tests that need real servers.)"
	tb.Fatal(msg)
}
