package cachex

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Strategy selects how a Cache serves reads. It can be changed at run time
// with Cache.SetStrategy; entries written under one strategy are read by all.
type Strategy string

const (
	// XFetch serves from Redis and refreshes probabilistically before expiry
	// in the background, deduplicated in-process and across instances. The
	// default.
	XFetch Strategy = "xfetch"
	// TTL is a plain read-through cache: on a miss or after expiry every
	// caller recomputes. It is here as the stampede baseline.
	TTL Strategy = "ttl"
	// None does not cache: every read calls the loader.
	None Strategy = "none"
)

// ParseStrategy returns the Strategy named s or an error naming the choices.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case XFetch, TTL, None:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("cachex: unknown strategy %q (want xfetch, ttl or none)", s)
}

// Options configure a Cache. Zero fields take the defaults documented on
// each; only Name and TTL are required.
type Options struct {
	// What every service sets: the name, how long values live, where the
	// metrics go and how long a Redis call may take.

	// Name is the cache's class name: the `cache` label on metrics and part
	// of every Redis key. Low cardinality: "product", never a product id.
	// Name and Prefix must not contain { or } (the hash tag of every key).
	Name string
	// TTL is the logical lifetime of a value: after it a read recomputes.
	// At least 1ms (envelopes keep milliseconds).
	TTL time.Duration
	// Registerer receives the cachex_* metrics; several caches may share one.
	// Nil registers nothing.
	Registerer prometheus.Registerer
	// Timeout bounds each Redis call by a context deadline. Default 100ms.
	// The client must honour context deadlines
	// (redis.Options.ContextTimeoutEnabled); New checks.
	Timeout time.Duration

	// Tuning: each zero field takes the default its comment gives.

	// Grace is how much longer Redis keeps a value after its logical expiry,
	// to be served if the recompute fails (stale-if-error). Default: TTL.
	Grace time.Duration
	// Beta scales early refresh: larger refreshes earlier. Default (and 0)
	// 1. The first refresh starts on average beta*delta*(ln(r*beta)+0.577)
	// before expiry, r being reads per delta (the time a recompute takes).
	Beta float64
	// NegativeTTL, when positive (at least 1ms), caches a loader's not-found
	// answer (an error matching ErrNotFound) for this long. Default 0: not
	// cached.
	NegativeTTL time.Duration
	// LoadTimeout bounds a recompute, which runs detached from the caller's
	// context so that one caller giving up does not fail the others waiting
	// for the same key. Default 10s.
	LoadTimeout time.Duration
	// LeaseWait is how long a cold miss waits for another instance that
	// holds the key's lock to write the value, before computing itself.
	// Default 2s.
	LeaseWait time.Duration
	// MaxLoads bounds the loader calls of this cache running at once in this
	// process (misses, bypasses, batches, early refreshes, and every call
	// under strategies ttl and none). When all are busy, a read waits for
	// one until its context ends, and an early refresh is skipped. Default 32.
	MaxLoads int
	// MaxRefreshes bounds background early refreshes in flight in this
	// process; more are skipped (the current value is still fresh). Default 64.
	MaxRefreshes int
	// BreakerFailures is how many Redis failures in a row open the breaker;
	// while open the cache bypasses Redis. Default 5.
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open before one probe
	// call may try Redis again. Default 1s.
	BreakerCooldown time.Duration
	// ClockSync is how often the offset of the Redis server's clock from
	// this process's is measured again: New measures it once (one TIME
	// call, bounded by Timeout; on failure the cache starts on its own
	// clock), then every ClockSync in the background. Expiries are compared
	// on the server's clock, so instances whose clocks disagree still agree
	// on them. Default 1 minute.
	ClockSync time.Duration
	// AutoPipeline sends the cache's commands through the client's
	// AutoPipeliner whenever another of its calls is in flight, and straight
	// through the client when a call is alone (nothing to batch with). It
	// needs a *redis.Client, *redis.ClusterClient or *redis.Ring; a client
	// that is itself an AutoPipeliner batches every call.
	AutoPipeline bool
	// ReuseDecoded, when positive, keeps the value last decoded for up to
	// this many keys (a slot per key, chosen by hash): a hit whose envelope
	// is byte for byte the one decoded then returns that value without
	// running the codec. A changed, refreshed or invalidated entry is a
	// different envelope, so it is never served from there. The value is
	// shared by every such hit: callers must treat it as immutable (no
	// writes through its pointers, maps or slices). Memory: at most
	// ReuseDecoded envelopes of up to 64 KiB each, plus their values.
	// Default 0: off.
	ReuseDecoded int

	// Keys.

	// Prefix starts every Redis key. Default Name + ":". Keys are
	// "{Prefix+key}:e<envelope version>.<Version>" and that plus ":lock",
	// one hash slot per key.
	Prefix string
	// Version is the version of the values' encoding: change it when V or
	// the codec changes in a way older code cannot read. Entries of
	// different versions live under different keys, so two versions of a
	// service running side by side during a rolling upgrade never take each
	// other's entries for corrupt ones. Default "" (any string without { or
	// }).
	Version string
	// InvalidateVersions are the other value versions whose entries
	// Invalidate also clears: during a rolling upgrade, the version being
	// replaced (in the new code) or the one coming (in the old), so that a
	// write through either invalidates both.
	InvalidateVersions []string

	// Tracing and logs.

	// TracerProvider, when set, gives the cache's spans: cachex.get and
	// cachex.get_many around each read, with the outcome, and
	// cachex.recompute around each loader call, with its reason; the
	// loader's context carries the recompute span. Nil: no spans, at the
	// cost of a nil check. Whatever the setting, a
	// loader call observed while the caller's span is sampled puts its trace
	// id on cachex_recompute_duration_seconds as an exemplar.
	TracerProvider trace.TracerProvider
	// Logger receives one line per loader panic (with its stack). Default
	// slog.Default(); a logger whose handler discards is silent.
	Logger *slog.Logger

	// Strategy is the strategy the cache starts with: XFetch by default.
	// TTL and None exist as the baselines the demo compares XFetch against
	// (Cache.SetStrategy switches at run time); a service needs neither.
	Strategy Strategy

	// Set by in-package tests only.
	now            func() time.Time // the clock; default time.Now
	rand           func() float64   // XFetch's uniform numbers; default math/rand/v2
	noEarlyRefresh bool             // beta 0: no early refresh
	noLease        bool             // cold misses compute without asking other instances
	noClockSync    bool             // compare expiries on now alone
}

// An Option changes what New builds beyond Options, for tests and fault
// checkers; a service needs none.
type Option func(*Options)

// WithClock makes the cache read the time from now instead of time.Now: a
// fault checker skews one instance's clock with it. Expiries are still
// compared on the Redis server's clock, estimated from now and measured
// again every ClockSync.
func WithClock(now func() time.Time) Option { return func(o *Options) { o.now = now } }

// ErrNotFound is what a loader returns, possibly wrapped together with an
// error of its own (fmt.Errorf("%w: %w", cachex.ErrNotFound, err)), when the
// value does not exist. With NegativeTTL set the answer is cached, and reads
// of the cached answer return ErrNotFound itself.
var ErrNotFound = errors.New("cachex: not found")

// withDefaults checks o and fills its zero fields with their defaults.
func (o Options) withDefaults() (Options, error) {
	if err := o.validate(); err != nil {
		return o, err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Grace, o.TTL)
	def(&o.Timeout, 100*time.Millisecond)
	def(&o.LoadTimeout, 10*time.Second)
	def(&o.BreakerCooldown, time.Second)
	def(&o.ClockSync, time.Minute)
	if o.LeaseWait == 0 && !o.noLease {
		o.LeaseWait = 2 * time.Second
	}
	if o.Beta == 0 && !o.noEarlyRefresh {
		o.Beta = 1
	}
	if o.Strategy == "" {
		o.Strategy = XFetch
	}
	if o.Prefix == "" {
		o.Prefix = o.Name + ":"
	}
	if o.MaxRefreshes <= 0 {
		o.MaxRefreshes = 64
	}
	if o.MaxLoads <= 0 {
		o.MaxLoads = 32
	}
	if o.BreakerFailures <= 0 {
		o.BreakerFailures = 5
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.rand == nil {
		o.rand = randFloat64
	}
	return o, nil
}

// validate refuses options no default can make work.
func (o Options) validate() error {
	if o.Name == "" {
		return errors.New("cachex: Options.Name is required")
	}
	if o.TTL < time.Millisecond {
		return fmt.Errorf("cachex: %s: Options.TTL %v is below 1ms (envelopes keep milliseconds)", o.Name, o.TTL)
	}
	if o.NegativeTTL > 0 && o.NegativeTTL < time.Millisecond {
		return fmt.Errorf("cachex: %s: Options.NegativeTTL %v is below 1ms", o.Name, o.NegativeTTL)
	}
	if strings.ContainsAny(o.Name+o.Prefix+o.Version+strings.Join(o.InvalidateVersions, ""), "{}") {
		return fmt.Errorf("cachex: %s: Name, Prefix and versions must not contain { or }: keys put the hash tag around them", o.Name)
	}
	if o.Beta < 0 || o.Grace < 0 || o.Timeout < 0 || o.LeaseWait < 0 || o.NegativeTTL < 0 || o.ReuseDecoded < 0 || o.ClockSync < 0 {
		return fmt.Errorf("cachex: %s: negative Beta, Grace, Timeout, LeaseWait, NegativeTTL, ReuseDecoded or ClockSync", o.Name)
	}
	if o.Strategy == "" {
		return nil
	}
	_, err := ParseStrategy(string(o.Strategy))
	return err
}
