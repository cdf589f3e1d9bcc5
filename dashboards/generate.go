package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Generated is one generated dashboard: its UID, the name of its file in
// dashboards/generated, and its JSON.
type Generated struct {
	UID  string
	File string
	// JSON is the exact content of the file: indented by two spaces, ending
	// in a newline, the same bytes on every run.
	JSON []byte
}

// All builds every dashboard and renders it, in a fixed order (overview
// first). The result does not depend on the environment or the time.
func All() ([]Generated, error) {
	var out []Generated
	for _, b := range boards() {
		d, err := b.build()
		if err != nil {
			return nil, err
		}
		js, err := render(d)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", b.uid, err)
		}
		out = append(out, Generated{UID: b.uid, File: b.file(), JSON: js})
	}
	return out, nil
}

// render is v as JSON indented by two spaces with a trailing newline, with
// <, > and & left readable (PromQL uses them) instead of escaped to \u003c...
func render(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, unescapeHTML(raw), "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes that encoding/json
// writes (even inside custom MarshalJSON methods) back into <, > and &. An
// escape preceded by an odd number of backslashes is a literal "\u003c" text
// and is kept.
func unescapeHTML(js []byte) []byte {
	repl := map[string]byte{`\u003c`: '<', `\u003e`: '>', `\u0026`: '&'}
	out := make([]byte, 0, len(js))
	for i := 0; i < len(js); i++ {
		if js[i] == '\\' {
			if i+6 <= len(js) {
				if c, ok := repl[string(js[i:i+6])]; ok {
					out = append(out, c)
					i += 5
					continue
				}
			}
			// Any other escape: copy it whole, so that the backslash of
			// `\\` does not pair with what follows.
			out = append(out, js[i], js[i+1])
			i++
			continue
		}
		out = append(out, js[i])
	}
	return out
}
