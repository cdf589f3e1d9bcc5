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
// stays at 1 (1 to 3 on a busy machine, where some reads bypass Redis); the
// demo's ttl bursts measured recomputeStormText (README, the live demo: make
// run-local DEMO=1 at a load average of about 30). The alert
// StampedeRecomputeStorm uses the same boundary as recomputeStormBad on its
// recomputes per stored value.
const (
	recomputeStormWarn = 1.1
	recomputeStormBad  = 1.25
	recomputeStormText = "17 to 106 on a busy 2-CPU machine"
)

// Hit ratio boundaries: red below hitRatioLow (StampedeHitRatioCollapse's
// threshold), green from hitRatioOK. The demo at rest measures about 75% over
// all caches (README, the live demo).
const (
	hitRatioLow = 0.5
	hitRatioOK  = 0.7
)
