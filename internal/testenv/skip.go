package testenv

import (
	"fmt"
	"testing"
)

// TB is what testenv needs of its caller. testing.TB has it; so can a
// command that sets up the same servers outside a test (cmd/torture), whose
// Fatal and Fatalf end the setup with an error.
type TB interface {
	Helper()
	Cleanup(func())
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
}

// skipShort skips the test when it runs under go test -short: the one case in
// which a test needing real servers does not run. A caller that is not a
// test is never skipped.
func skipShort(tb TB, what string) {
	tb.Helper()
	if _, test := tb.(testing.TB); test && testing.Short() {
		tb.Skipf("testenv: %s needs a real server; skipped under -short", what)
	}
}

// missing fails the test with what to install to get the server it needs.
func missing(tb TB, what, install string, tried []string) {
	tb.Helper()
	msg := fmt.Sprintf("testenv: no %s available.\n%s\nTried:", what, install)
	for _, t := range tried {
		msg += "\n  - " + t
	}
	msg += "\n(go test -short skips tests that need real servers.)"
	tb.Fatal(msg)
}
