package cachex

import (
	"math"
	"math/rand/v2"
	"time"
)

// shouldRefresh is the XFetch decision: recompute early when
// now - delta*beta*ln(u) >= expiry, u uniform in (0,1]; beta <= 0 disables
// early refresh (Vattani, Chierichetti and Lowenstein, "Optimal
// Probabilistic Cache Stampede Prevention", VLDB 2015).
func shouldRefresh(now, expiry time.Time, delta time.Duration, beta, u float64) bool {
	if !now.Before(expiry) {
		return true
	}
	if beta <= 0 || delta <= 0 {
		return false
	}
	gap := float64(expiry.Sub(now))
	return -float64(delta)*beta*math.Log(u) >= gap
}

// uniformOpen maps r in [0,1) (what rand sources return) to u in (0,1], so
// ln(u) is finite.
func uniformOpen(r float64) float64 { return 1 - r }

// randFloat64 is the default random source: math/rand/v2's, safe for
// concurrent use and seeded per process.
func randFloat64() float64 { return rand.Float64() }
