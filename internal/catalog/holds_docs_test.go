package catalog

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// holdTable renders holdMoves as docs/api.md's table of the hold's moves.
func holdTable() string {
	short := strings.NewReplacer(takeApplied, "EXISTS take:<key>", giveApplied, "EXISTS give:<id>", "\n", " ")
	var b strings.Builder
	b.WriteString("| move | from | to | by | guard (the statement's condition) | truth after it |\n|---|---|---|---|---|---|\n")
	for _, m := range holdMoves {
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s | `%s` | %s |\n", m.name, m.from, m.to, m.by, short.Replace(m.guard), m.truth)
	}
	return b.String()
}

// TestTheHoldTableIsTheDocs: docs/api.md shows the state machine the store
// runs, move by move.
func TestTheHoldTableIsTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := holdTable(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/api.md does not show the hold's moves as holds.go has them; the table should read:\n\n%s", want)
	}
}

// TestEveryMoveIsGuarded: each statement that moves a hold carries its
// guard, so that the table's guard is what runs.
func TestEveryMoveIsGuarded(t *testing.T) {
	for _, m := range holdMoves {
		if m.name == "" || m.sql == "" || m.guard == "" || m.truth == "" {
			t.Errorf("move %+v is incomplete", m)
		}
		if m.name != "intend" && !strings.Contains(m.sql, m.guard) {
			t.Errorf("%s: the statement does not carry its guard %q", m.name, m.guard)
		}
	}
}
