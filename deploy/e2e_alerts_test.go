package deploy_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// window is a stretch of the end-to-end scenario.
type window struct{ from, to time.Time }

// e2eWindows are TestEndToEnd's windows: healthy (the demo with xfetch
// bursts), stampede (a long burst under ttl) and faults.
type e2eWindows struct{ healthy, stampede, faults window }

// byName returns the windows by the names expectedAlerts uses.
func (w e2eWindows) byName() map[string]window {
	return map[string]window{"healthy": w.healthy, "stampede": w.stampede, "faults": w.faults}
}

// e2eWarmUp is how long the demo runs before the healthy window opens: the
// caches fill and the 1m rate windows cover the demo's traffic only.
const e2eWarmUp = 20 * time.Second

// expectedAlerts says, for every alert of deploy/rules/alerts.yml, the
// window of TestEndToEnd in which it must reach a state: "firing", or
// "pending" (pending or firing; the rule's `for` is longer than the
// window). No alert may be pending or firing in the healthy window.
var expectedAlerts = []struct{ alert, window, state string }{
	{"StampedeRecomputeStorm", "stampede", "firing"}, // the ttl burst's duplicate recomputes
	{"StampedeCacheRedisErrors", "faults", "pending"},
	{"StampedeHitRatioCollapse", "faults", "pending"}, // every read bypasses Redis
	{"StampedeLockLost", "faults", "firing"},          // reservations paused past the lock TTL
	{"StampedeFencedWrites", "faults", "firing"},
	{"StampedeTargetDown", "faults", "pending"},           // api-2 hung by SIGSTOP
	{"StampedeHigh5xxRate", "faults", "pending"},          // no lock quorum: reservations answer 503
	{"StampedeLatencyBudgetFastBurn", "faults", "firing"}, // 1.5 s on every query
	{"StampedeLatencyBudgetSlowBurn", "faults", "firing"},
}

// checkAlerts checks expectedAlerts against Prometheus's ALERTS series, and
// that every alert of the rules has an expectation.
func checkAlerts(t *testing.T, root, prom string, w e2eWindows) {
	windows := w.byName()
	expected := map[string]bool{}
	for _, e := range expectedAlerts {
		expected[e.alert] = true
		win, ok := windows[e.window]
		if !ok {
			t.Fatalf("%s: no window %q", e.alert, e.window)
		}
		states := "firing"
		if e.state == "pending" {
			states = "pending|firing"
		}
		expr := fmt.Sprintf(`ALERTS{alertname=%q, alertstate=~%q}`, e.alert, states)
		if len(rangeQuery(t, prom, expr, win.from, win.to)) == 0 {
			t.Errorf("%s did not reach %s in the %s window (%s)", e.alert, e.state, e.window, seen(t, prom, e.alert, w))
		}
	}
	for _, name := range alertNames(t, filepath.Join(root, rulesFile)) {
		if !expected[name] {
			t.Errorf("%s has no expected state in the end-to-end scenario (expectedAlerts)", name)
		}
	}
	var noisy []string
	for _, s := range rangeQuery(t, prom, "ALERTS", w.healthy.from, w.healthy.to) {
		noisy = append(noisy, s.Metric["alertname"]+" "+s.Metric["alertstate"])
	}
	if len(noisy) > 0 {
		t.Errorf("alerts pending or firing in the healthy window: %s", strings.Join(noisy, ", "))
	}
}

// seen says in which window and state an alert was seen, for failures.
func seen(t *testing.T, prom, alert string, w e2eWindows) string {
	var out []string
	for name, win := range w.byName() {
		for _, s := range rangeQuery(t, prom, fmt.Sprintf(`ALERTS{alertname=%q}`, alert), win.from, win.to) {
			out = append(out, s.Metric["alertstate"]+" in "+name)
		}
	}
	if len(out) == 0 {
		return "never pending or firing"
	}
	return strings.Join(out, ", ")
}

// alertNames returns the alert names of a rule file.
func alertNames(t *testing.T, path string) []string {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, path, &rules)
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	return names
}
