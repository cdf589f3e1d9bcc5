package loadgen

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Key identifies one series of client-side measurements. Its fields are the
// labels of loadgen_requests_total and loadgen_request_duration_seconds
// (docs/metrics.md).
type Key struct {
	Scenario string
	Endpoint string
	Code     string
}

// Series is the counters and latency histogram of one Key.
type Series struct {
	Requests int64
	Errors   int64
	Latency  *Histogram
}

// Stats holds every client-side counter and histogram of a loadgen process
// in one place: cumulative series per Key, dropped arrivals per scenario,
// and an interval histogram that Snapshot drains for the progress line.
// All methods are safe for concurrent use.
type Stats struct {
	clock Clock
	start time.Time

	mu       sync.Mutex
	phase    string
	series   map[Key]*Series
	dropped  map[string]int64
	requests int64 // all scenarios, cumulative
	errors   int64
	drops    int64

	// Interval state, reset by Snapshot.
	last         time.Time
	lastRequests int64
	window       *Histogram
}

// NewStats returns empty Stats whose elapsed time counts from clock.Now().
// A nil clock means RealClock.
func NewStats(clock Clock) *Stats {
	if clock == nil {
		clock = RealClock{}
	}
	now := clock.Now()
	return &Stats{
		clock:   clock,
		start:   now,
		last:    now,
		series:  make(map[Key]*Series),
		dropped: make(map[string]int64),
		window:  NewHistogram(),
	}
}

// SetPhase names what the run is doing now ("ttl", "xfetch beta=1", ...);
// it is shown on the progress line.
func (s *Stats) SetPhase(phase string) {
	s.mu.Lock()
	s.phase = phase
	s.mu.Unlock()
}

// Observe records one finished request of scenario. A nil Outcome.Err counts
// as success whatever the code; an empty Endpoint or Code is recorded as "-".
func (s *Stats) Observe(scenario string, out Outcome, latency time.Duration) {
	k := Key{Scenario: scenario, Endpoint: orDash(out.Endpoint), Code: orDash(out.Code)}
	s.mu.Lock()
	ser := s.series[k]
	if ser == nil {
		ser = &Series{Latency: NewHistogram()}
		s.series[k] = ser
	}
	ser.Requests++
	s.requests++
	if out.Err != nil {
		ser.Errors++
		s.errors++
	}
	// Recorded under s.mu so that Snapshot's window swap never loses one.
	ser.Latency.Record(latency)
	s.window.Record(latency)
	s.mu.Unlock()
}

// Drop records one arrival of scenario that was not started (see Runner).
func (s *Stats) Drop(scenario string) {
	s.mu.Lock()
	s.dropped[scenario]++
	s.drops++
	s.mu.Unlock()
}

// ObserveResult records a Runner result under scenario: Drop for dropped
// arrivals, Observe with the scheduled-start latency otherwise.
func (s *Stats) ObserveResult(scenario string, r Result) {
	if r.Dropped {
		s.Drop(scenario)
		return
	}
	s.Observe(scenario, r.Outcome, r.Latency)
}

// Series returns a copy of every series, sorted by scenario, endpoint, code.
// The copies do not change when more is recorded.
func (s *Stats) Series() ([]Key, []Series) {
	s.mu.Lock()
	keys := make([]Key, 0, len(s.series))
	for k := range s.series {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Scenario != b.Scenario {
			return a.Scenario < b.Scenario
		}
		if a.Endpoint != b.Endpoint {
			return a.Endpoint < b.Endpoint
		}
		return a.Code < b.Code
	})
	out := make([]Series, len(keys))
	for i, k := range keys {
		ser := s.series[k]
		out[i] = Series{Requests: ser.Requests, Errors: ser.Errors, Latency: ser.Latency.Clone()}
	}
	s.mu.Unlock()
	return keys, out
}

// Dropped returns the number of dropped arrivals of scenario.
func (s *Stats) Dropped(scenario string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped[scenario]
}

// Snapshot is what the progress line shows at one moment.
type Snapshot struct {
	Elapsed  time.Duration // since NewStats
	Phase    string
	Requests int64 // finished requests, cumulative
	Errors   int64 // failed requests, cumulative
	Dropped  int64 // dropped arrivals, cumulative
	// Interval figures cover the requests finished since the previous
	// Snapshot (or since NewStats for the first one).
	Interval time.Duration
	RPS      float64       // finished requests per second in the interval
	P50, P99 time.Duration // latency percentiles in the interval (0 if none)
}

// Snapshot returns the current figures and starts a new interval: each call
// reports rps and percentiles only for requests finished since the last
// call, so a once-a-second progress line shows the current second.
func (s *Stats) Snapshot() Snapshot {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	win := s.window
	s.window = NewHistogram()
	snap := Snapshot{
		Elapsed:  now.Sub(s.start),
		Phase:    s.phase,
		Requests: s.requests,
		Errors:   s.errors,
		Dropped:  s.drops,
		Interval: now.Sub(s.last),
		P50:      win.Percentile(50),
		P99:      win.Percentile(99),
	}
	if snap.Interval > 0 {
		snap.RPS = float64(s.requests-s.lastRequests) / snap.Interval.Seconds()
	}
	s.last = now
	s.lastRequests = s.requests
	return snap
}

// FormatProgress renders a snapshot as one line without a newline, e.g.
//
//	elapsed=1m5s phase=xfetch rps=99.8 p50=1.23ms p99=45.6ms errors=2 dropped=0
//
// Fields are always present and in this order so logs stay greppable; an
// empty phase prints as "-". Latencies keep three significant digits.
func FormatProgress(s Snapshot) string {
	return fmt.Sprintf("elapsed=%s phase=%s rps=%.1f p50=%s p99=%s errors=%d dropped=%d",
		s.Elapsed.Truncate(time.Second), orDash(s.Phase), s.RPS,
		roundSig(s.P50), roundSig(s.P99), s.Errors, s.Dropped)
}

// roundSig rounds d to about three significant digits for display.
func roundSig(d time.Duration) time.Duration {
	for _, u := range []time.Duration{100 * time.Second, 10 * time.Second, time.Second,
		100 * time.Millisecond, 10 * time.Millisecond, time.Millisecond,
		100 * time.Microsecond, 10 * time.Microsecond, time.Microsecond} {
		if d >= u {
			return d.Round(u / 100)
		}
	}
	return d
}

// orDash returns s, or "-" when s is empty, so labels and fields are never blank.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
