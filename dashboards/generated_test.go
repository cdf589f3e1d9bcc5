package dashboards

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate checks that dashboards/generated holds exactly what
// the generator writes, byte for byte.
func TestGeneratedUpToDate(t *testing.T) {
	gen, err := All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, g := range gen {
		want[g.File] = true
		got, err := os.ReadFile(filepath.Join("generated", g.File))
		if err != nil {
			t.Errorf("%s: %v; run `make dashboards`", g.UID, err)
			continue
		}
		if !bytes.Equal(got, g.JSON) {
			t.Errorf("generated/%s is out of date with the Go definitions of %s; run `make dashboards` and commit the result",
				g.File, g.UID)
		}
	}
	entries, err := os.ReadDir("generated")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && !want[e.Name()] {
			t.Errorf("generated/%s is not a generated dashboard; run `make dashboards` (it removes stale files)", e.Name())
		}
	}
}

// TestAllDeterministic checks that two runs render the same bytes, in the
// expected file format.
func TestAllDeterministic(t *testing.T) {
	a, err := All()
	if err != nil {
		t.Fatal(err)
	}
	b, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d dashboards, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].UID != b[i].UID || a[i].File != b[i].File || !bytes.Equal(a[i].JSON, b[i].JSON) {
			t.Errorf("dashboard %d (%s) differs between two runs", i, a[i].UID)
		}
		js := a[i].JSON
		if !bytes.HasPrefix(js, []byte("{\n  \"")) || !bytes.HasSuffix(js, []byte("}\n")) || bytes.HasSuffix(js, []byte("\n\n")) {
			t.Errorf("%s: not two-space indented JSON with one trailing newline", a[i].File)
		}
		if bytes.Contains(js, []byte(`\u003`)) || bytes.Contains(js, []byte(`\u0026`)) {
			t.Errorf("%s: HTML-escaped characters left in the JSON", a[i].File)
		}
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`"a \u003e 0"`:         `"a > 0"`,
		`"\u003c\u0026"`:       `"<&"`,
		`"\\u003e"`:            `"\\u003e"`,
		`"\\\u003e"`:           `"\\>"`,
		`"\"\u003e\""`:         `"\">\""`,
		`{"k":"\u00e9\u003e"}`: `{"k":"\u00e9>"}`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}
