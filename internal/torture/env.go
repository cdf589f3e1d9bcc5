package torture

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ErrSetup wraps every failure to set up the environment: cmd/torture exits
// 2 on it, not 1 (an anomaly).
var ErrSetup = errors.New("torture: environment")

// Env is the servers a run owns. It gives testenv what a test would
// (testenv.TB): its Fatal ends the setup with ErrSetup instead of failing a
// test, and Close runs the cleanups in reverse order.
type Env struct {
	cleanups []func()
	tmp      []string
	errs     []string // Errorf's, reported by the Setup they happen in
}

// fatal is the panic value of Env's Fatal, recovered by Setup.
type fatal struct{ msg string }

// Setup runs f, which starts servers through testenv on e; a testenv failure
// inside it is returned as an error wrapping ErrSetup.
func (e *Env) Setup(f func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			ft, ok := v.(fatal)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("%w: %s", ErrSetup, ft.msg)
		}
	}()
	e.errs = nil
	f()
	if len(e.errs) > 0 {
		return fmt.Errorf("%w: %s", ErrSetup, strings.Join(e.errs, "; "))
	}
	return nil
}

// Close stops everything the run started, newest first. A cleanup that
// fails does not stop the others.
func (e *Env) Close() {
	for _, f := range slices.Backward(e.cleanups) {
		_ = e.Setup(f)
	}
	e.cleanups = nil
	for _, d := range e.tmp {
		_ = os.RemoveAll(d)
	}
}

// Helper is part of testenv.TB; it does nothing here.
func (e *Env) Helper() {}

// Cleanup registers f to run at Close.
func (e *Env) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

// Fatal ends the setup with args as the reason.
func (e *Env) Fatal(args ...any) { panic(fatal{fmt.Sprint(args...)}) }

// Fatalf ends the setup with the formatted reason.
func (e *Env) Fatalf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }

// Errorf records a failure; the Setup it happens in returns it.
func (e *Env) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// Skipf ends the setup: a run cannot skip what it needs.
func (e *Env) Skipf(format string, args ...any) { panic(fatal{fmt.Sprintf(format, args...)}) }

// TempDir returns a new directory, removed at Close.
func (e *Env) TempDir() string {
	d, err := os.MkdirTemp("", "torture-")
	if err != nil {
		e.Fatalf("temp dir: %v", err)
	}
	e.tmp = append(e.tmp, d)
	return d
}
