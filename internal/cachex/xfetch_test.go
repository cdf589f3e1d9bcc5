package cachex

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestShouldRefreshBoundaries(t *testing.T) {
	t.Parallel()
	expiry := time.Unix(1000, 0)
	delta := 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		now  time.Time
		beta float64
		u    float64
		want bool
	}{
		{"at expiry", expiry, 1, 1, true},
		{"after expiry, beta 0", expiry.Add(time.Millisecond), 0, 1, true},
		{"u = 1 never refreshes early", expiry.Add(-time.Nanosecond), 1, 1, false},
		{"beta 0 never refreshes early", expiry.Add(-time.Nanosecond), 0, 1e-300, false},
		// -ln(u) = 1: refresh exactly when the gap is at most delta*beta.
		{"gap = delta*beta", expiry.Add(-delta), 1, 1 / math.E, true},
		{"gap > delta*beta", expiry.Add(-delta - time.Millisecond), 1, 1 / math.E, false},
		{"beta 2 doubles the reach", expiry.Add(-2 * delta), 2, 1 / math.E, true},
		// -ln(smallest float64) ≈ 744.4: finite, so the reach is bounded.
		{"smallest u reaches far", expiry.Add(-time.Minute), 1, math.SmallestNonzeroFloat64, true},
		{"smallest u is still finite", expiry.Add(-2 * time.Minute), 1, math.SmallestNonzeroFloat64, false},
	} {
		if got := shouldRefresh(tc.now, expiry, delta, tc.beta, tc.u); got != tc.want {
			t.Errorf("%s: shouldRefresh = %v, want %v", tc.name, got, tc.want)
		}
	}
	if u := uniformOpen(0); u != 1 {
		t.Errorf("uniformOpen(0) = %v, want 1 (never 0)", u)
	}
}

// TestXFetchStatistics drives the XFetch decision on a virtual clock with no
// refresh lock: every read that decides to refresh recomputes, and a recompute
// takes delta. Theory (the XFetch paper, Vattani et al. 2015): per expiry window about e^(1/beta)
// recomputes start, and the first starts beta*delta*(ln(r*beta) + γ) before
// expiry on average, r being reads per delta.
func TestXFetchStatistics(t *testing.T) {
	t.Parallel()
	const (
		r       = 100 // reads per delta
		windows = 2000
		gamma   = 0.5772156649
	)
	delta := 100 * time.Millisecond
	step := delta / r
	for _, beta := range []float64{0.5, 1, 2} {
		rng := rand.New(rand.NewPCG(1, uint64(beta*1000)))
		var recomputes, expiredReads int
		var leadSum time.Duration
		now := time.Unix(0, 0)
		for range windows {
			// Reads further than 10*beta*delta from expiry would refresh with
			// probability below e^-10 each (r*beta*e^-10 per window in all,
			// under 1%): start the window there instead of simulating them.
			expiry := now.Add(time.Duration(10 * beta * float64(delta)))
			var firstAt time.Time
			// Reads until the first refresh lands (delta after it started).
			for firstAt.IsZero() || now.Before(firstAt.Add(delta)) {
				if !now.Before(expiry) {
					expiredReads++
				}
				if shouldRefresh(now, expiry, delta, beta, uniformOpen(rng.Float64())) {
					recomputes++
					if firstAt.IsZero() {
						firstAt = now
						leadSum += expiry.Sub(now)
					}
				}
				now = now.Add(step)
			}
		}
		perWindow := float64(recomputes) / windows
		wantPer := math.Exp(1 / beta)
		lead := float64(leadSum) / windows / float64(delta)
		wantLead := beta * (math.Log(r*beta) + gamma)
		t.Logf("beta %.1f: %.3f recomputes per window (theory %.3f), mean lead %.3f delta (theory %.3f), %d reads past expiry",
			beta, perWindow, wantPer, lead, wantLead, expiredReads)
		if math.Abs(perWindow-wantPer)/wantPer > 0.10 {
			t.Errorf("beta %v: %.3f recomputes per window, want within 10%% of e^(1/beta) = %.3f", beta, perWindow, wantPer)
		}
		if math.Abs(lead-wantLead)/wantLead > 0.10 {
			t.Errorf("beta %v: mean lead %.3f delta, want within 10%% of %.3f", beta, lead, wantLead)
		}
	}
}
