package dashboards

import (
	"errors"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// TestJSONMatchesSDKSchema decodes every generated file with the SDK's strict
// decoder: no unknown fields, no missing required ones, panel options and
// queries of the right shape for their plugin.
func TestJSONMatchesSDKSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	gen, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gen {
		var d dashboard.Dashboard
		err := d.UnmarshalJSONStrict(g.JSON)
		// The strict decoder returns an empty cog.BuildErrors, not nil, on
		// success.
		var be cog.BuildErrors
		if errors.As(err, &be) && len(be) == 0 {
			err = nil
		}
		if err != nil {
			t.Errorf("%s: %v", g.File, err)
		}
	}
}
