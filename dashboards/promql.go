package dashboards

import (
	"fmt"
	"strings"
)

// filter is the label filter every selector carries: the dashboard's job and
// instance variables.
const filter = `job=~"$job", instance=~"$instance"`

// sel is metric{job=~"$job", instance=~"$instance", matchers...}.
func sel(metric string, matchers ...string) string {
	return metric + "{" + strings.Join(append([]string{filter}, matchers...), ", ") + "}"
}

// rate is rate(sel(...)[$__rate_interval]).
func rate(metric string, matchers ...string) string {
	return "rate(" + sel(metric, matchers...) + "[$__rate_interval])"
}

// sumBy is sum by (by) (expr), or sum(expr) when by is empty.
func sumBy(by, expr string) string {
	if by == "" {
		return "sum(" + expr + ")"
	}
	return "sum by (" + by + ") (" + expr + ")"
}

// sumRate is sum by (by) (rate(metric{...}[$__rate_interval])).
func sumRate(by, metric string, matchers ...string) string {
	return sumBy(by, rate(metric, matchers...))
}

// quantile is the q-quantile of histogram hist (without _bucket), grouped by
// by. ">= 0" drops the NaN that histogram_quantile answers for a window
// without observations (between the demo's bursts, say): a gap, not NaN.
func quantile(q float64, by, hist string, matchers ...string) string {
	le := "le"
	if by != "" {
		le = by + ", le"
	}
	return fmt.Sprintf("(histogram_quantile(%g, %s) >= 0)", q, sumRate(le, hist+"_bucket", matchers...))
}

// ratioOrZero is num / den where a group without num counts as 0 rather than
// missing: (num or den * 0) / (den > 0). Both are sums grouped by the same
// labels; a group without traffic in the window has no point, not NaN.
func ratioOrZero(num, den string) string {
	return "(" + num + " or " + den + " * 0) / " + nonZero(den)
}

// increaseOverRange is sum(increase(metric{...}[$__range])): events in the
// dashboard's time range.
func increaseOverRange(metric string, matchers ...string) string {
	return "sum(increase(" + sel(metric, matchers...) + "[$__range]))"
}

// onlyPositive keeps the series of expr that are above zero, so that a panel
// about faults is empty while nothing is wrong (the counters exist, at zero,
// from the start).
func onlyPositive(expr string) string { return expr + " > 0" }

// nonZero is (expr > 0): as a divisor it leaves a gap where expr is 0, not
// NaN.
func nonZero(expr string) string { return "(" + onlyPositive(expr) + ")" }
