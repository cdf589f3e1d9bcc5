package chartcheck

import "testing"

// TestRenders renders both value sets and decodes every manifest strictly.
func TestRenders(t *testing.T) {
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			r := render(t, vs.values)
			kinds := map[string]int{}
			for _, m := range r.manifests {
				kinds[m.kind]++
			}
			t.Logf("%d manifests: %v", len(r.manifests), kinds)
		})
	}
}
