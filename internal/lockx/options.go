package lockx

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Locker. Zero fields take the documented defaults; only
// Name is required.
type Options struct {
	// Name is the lock class: the `name` label on metrics and part of every
	// key. Low cardinality ("inventory"), never a resource id.
	Name string
	// TTL is how long a lock lives on the servers without an extension.
	// Default 10s. The watchdog extends it every TTL/3.
	TTL time.Duration
	// Wait is how long Acquire tries before it gives up (ErrNotAcquired, or
	// ErrUnavailable when too few servers answered). Default 5s. Acquire
	// returns at most Timeout after it; the caller's context can end it
	// sooner.
	Wait time.Duration
	// RetryMin and RetryMax bound the jittered, doubling pause between
	// attempts when no release wakes the waiter first. Defaults 5ms, 200ms.
	// RetryMin is also the least an attempt waits for the other servers'
	// votes once a quorum has answered without settling it.
	RetryMin, RetryMax time.Duration
	// Timeout bounds each call to a server (a context deadline), and one
	// attempt in all. Default TTL/10. It must be below TTL/3 so a dead node
	// cannot hold up the watchdog.
	Timeout time.Duration
	// SafetyMargin is how long before the lock's proven validity ends the
	// holder is told the lock is lost, when no extension succeeded in time.
	// Default TTL/10.
	SafetyMargin time.Duration
	// NoWatchdog disables extension: the lock lives TTL and the holder's
	// context ends SafetyMargin before that.
	NoWatchdog bool
	// HandOver queues waiters on the server and has Release hand the lock
	// to the first still waiting (first come, first served). Cost: a waiter
	// that crashed while queued can be handed the lock, idle until TTL runs
	// out (never after its Wait would have ended). One server only (New
	// refuses several). Default off.
	HandOver bool
	// Prefix starts every key. Default "lockx:" + Name + ":".
	Prefix string
	// Registerer receives the lockx_* metrics; Lockers may share one. Nil
	// registers nothing.
	Registerer prometheus.Registerer
	// TracerProvider, when set, gives a lockx.acquire span per Acquire and
	// TryAcquire (attempts, wait, result, token) and a lockx.lost event on
	// the caller's span when a held lock is lost. Nil: neither, at the cost
	// of a nil check. Whatever the setting, an
	// acquisition whose caller's span is sampled puts its trace id on
	// lockx_acquire_wait_seconds as an exemplar.
	TracerProvider trace.TracerProvider
}

// withDefaults fills o's zero fields with their defaults and checks that
// the result can work.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		return o, errors.New("lockx: Options.Name is required")
	}
	if o.TTL < 0 || o.Wait < 0 || o.RetryMin < 0 || o.RetryMax < 0 || o.Timeout < 0 || o.SafetyMargin < 0 {
		return o, fmt.Errorf("lockx: %s: negative durations in Options", o.Name)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.TTL, 10*time.Second)
	def(&o.Wait, 5*time.Second)
	def(&o.RetryMin, 5*time.Millisecond)
	def(&o.RetryMax, 200*time.Millisecond)
	def(&o.Timeout, o.TTL/10)
	def(&o.SafetyMargin, o.TTL/10)
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	if o.Prefix == "" {
		o.Prefix = "lockx:" + o.Name + ":"
	}
	return o, o.checkTiming()
}

// checkTiming refuses a TTL, Timeout and SafetyMargin that leave the
// watchdog no time to work.
func (o Options) checkTiming() error {
	if o.TTL < 30*time.Millisecond {
		return fmt.Errorf("lockx: %s: TTL %v is too short to extend (want >= 30ms)", o.Name, o.TTL)
	}
	if o.Timeout >= o.TTL/3 {
		return fmt.Errorf("lockx: %s: Timeout %v must be below TTL/3 (%v)", o.Name, o.Timeout, o.TTL/3)
	}
	if o.SafetyMargin+drift(o.TTL) >= o.TTL {
		return fmt.Errorf("lockx: %s: SafetyMargin %v leaves no validity in TTL %v", o.Name, o.SafetyMargin, o.TTL)
	}
	// The watchdog's first extension is sent TTL/3 after the attempt and
	// takes up to Timeout: it must be back before the holder is told the
	// lock is lost.
	if !o.NoWatchdog && o.TTL/3+o.Timeout+o.SafetyMargin+drift(o.TTL) >= o.TTL {
		return fmt.Errorf("lockx: %s: SafetyMargin %v leaves no time for the first extension (TTL/3 %v + Timeout %v) in TTL %v",
			o.Name, o.SafetyMargin, o.TTL/3, o.Timeout, o.TTL)
	}
	return nil
}

// fenceExpiry is how long a fence counter outlives its resource's last
// acquisition, in ms: a day, or ten TTLs if longer (harmless: a missing
// counter restarts from the server's clock, above every token issued
// before).
func fenceExpiry(ttl time.Duration) int64 { return max(24*time.Hour, 10*ttl).Milliseconds() }

// drift is the clock drift Redlock allows for: 1% of the TTL plus 2ms for
// the servers' expiry granularity.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }
