package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// step is one threshold: from value on (nil: the base), the panel shows color.
type step struct {
	value *float64
	color string
}

// at is the step from v on.
func at(v float64, color string) step { return step{value: &v, color: color} }

// okAlways is green whatever the value: for rates with no good or bad level.
func okAlways() []step { return []step{{color: "green"}} }

// higherIsBetter: red below ok, green from ok on.
func higherIsBetter(ok float64) []step {
	return []step{{color: "red"}, at(ok, "green")}
}

// higherIsBetter3: red below warn, yellow from warn, green from ok on.
func higherIsBetter3(warn, ok float64) []step {
	return []step{{color: "red"}, at(warn, "yellow"), at(ok, "green")}
}

// lowerIsBetter: green below warn, yellow from warn, red from bad on.
func lowerIsBetter(warn, bad float64) []step {
	return []step{{color: "green"}, at(warn, "yellow"), at(bad, "red")}
}

// anyIsBad: green at zero, red from bad on (for counts of faults).
func anyIsBad(bad float64) []step {
	return []step{{color: "green"}, at(bad, "red")}
}

// thresholdsBuilder turns steps into the SDK's absolute thresholds.
func thresholdsBuilder(steps []step) *dashboard.ThresholdsConfigBuilder {
	out := make([]dashboard.Threshold, 0, len(steps))
	for _, s := range steps {
		out = append(out, dashboard.Threshold{Value: s.value, Color: s.color})
	}
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps(out)
}

// Recomputes of the hottest key per TTL window (recomputesPerKey): xfetch
// stays at 1, now and then 2 (an early refresh and the next in one
// clock-aligned window); above 3 StampedeRecomputeStorm fires. The demo's
// ttl bursts measured recomputeStormText (docs/running.md, the live demo:
// docs/demo/quiet.md, docs/demo/busy.md).
const (
	recomputeStormWarn = 2
	recomputeStormBad  = 4
	recomputeStormText = "a median of 45 and up to 91 on a quiet 2-CPU machine, 30 and up to 47 with both cores busy"
)

// Hit ratio boundaries: red below hitRatioLow (StampedeHitRatioCollapse's
// threshold), green from hitRatioOK. The demo at rest measures about 75% over
// all caches (docs/running.md, the live demo).
const (
	hitRatioLow = 0.5
	hitRatioOK  = 0.7
)
