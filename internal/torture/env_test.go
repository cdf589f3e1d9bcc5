package torture

import (
	"errors"
	"testing"
)

// TestEnvTurnsFailuresIntoErrors: what would fail a test fails the setup
// with ErrSetup, and a failing cleanup does not stop the others.
func TestEnvTurnsFailuresIntoErrors(t *testing.T) {
	e := &Env{}
	if err := e.Setup(func() { e.Fatalf("no %s", "server") }); !errors.Is(err, ErrSetup) || err.Error() != "torture: environment: no server" {
		t.Errorf("Fatalf: %v", err)
	}
	if err := e.Setup(func() { e.Errorf("drop failed") }); !errors.Is(err, ErrSetup) {
		t.Errorf("Errorf: %v", err)
	}
	if err := e.Setup(func() {}); err != nil {
		t.Errorf("a clean setup: %v", err)
	}
	ran := 0
	e.Cleanup(func() { ran++ })
	e.Cleanup(func() { e.Fatal("cleanup fails") })
	e.Close()
	if ran != 1 {
		t.Errorf("%d cleanups ran after a failing one, want 1", ran)
	}
}
