package cachex

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
)

// Cache is a read-through cache of values of type V in Redis. It is safe for
// concurrent use. Create it with New and stop it with Close.
type Cache[V any] struct {
	conn    *conn
	codec   Codec[V]
	opts    Options
	m       *metrics
	brk     *breaker
	scripts scripts

	strategy atomic.Value  // Strategy
	beta     atomic.Uint64 // math.Float64bits of the default beta
	offset   atomic.Int64  // the Redis server's clock minus the cache's, in ns

	versions    string     // keyVersions(opts.Version)
	invalidated []string   // what follows the braces of the keys Invalidate clears
	loads       flights[V] // recomputes that callers wait for
	refreshMu   sync.Mutex // guards refreshing
	refreshing  map[string]struct{}
	slots       chan struct{} // background refresh slots
	loading     chan struct{} // loader call slots (MaxLoads)
	reused      *reuse[V]     // Options.ReuseDecoded; nil when off
	tr          *tracer       // Options.TracerProvider; nil when off
	near        *near         // the client's near cache; nil without one
	deadlines   *deadlines    // the contexts of Redis calls

	base   context.Context // cancelled by Close
	cancel context.CancelFunc
	life   sync.RWMutex // guards closed, and wg.Add against Close's wg.Wait
	closed bool
	wg     sync.WaitGroup // background work
}

// ErrClosed is returned by reads that start after Close has begun.
var ErrClosed = errors.New("cachex: cache closed")

// New returns a cache over rdb (a *redis.Client, *redis.ClusterClient or
// *redis.Ring, or the *redis.AutoPipeliner of one) that encodes values with
// codec. It fails when the options are invalid, when the metrics cannot be
// registered, or when rdb, or the client behind it, ignores context
// deadlines (redis.Options.ContextTimeoutEnabled false): every call
// carries a deadline of Options.Timeout, and only with it do dialling, pool
// waits, retries, reads and writes all end there. Other client types must
// honour context deadlines themselves.
func New[V any](rdb redis.UniversalClient, codec Codec[V], opts Options, with ...Option) (*Cache[V], error) {
	if rdb == nil || codec == nil {
		return nil, errors.New("cachex: New needs a Redis client and a codec")
	}
	for _, f := range with {
		f(&opts)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkDeadlines(rdb); err != nil {
		return nil, fmt.Errorf("cachex: %s: %w", opts.Name, err)
	}
	cn, err := newConn(rdb, opts.AutoPipeline)
	if err != nil {
		return nil, fmt.Errorf("cachex: %s: %w", opts.Name, err)
	}
	nr, err := nearOf(rdb)
	if err != nil {
		return nil, fmt.Errorf("cachex: %s: %w", opts.Name, err)
	}
	m, err := newMetrics(opts.Registerer, opts.Name)
	if err != nil {
		return nil, err
	}
	c := &Cache[V]{
		conn:       cn,
		codec:      codec,
		opts:       opts,
		m:          m,
		brk:        newBreaker(opts.BreakerFailures, opts.BreakerCooldown, opts.now),
		scripts:    newScripts(),
		refreshing: make(map[string]struct{}),
		slots:      make(chan struct{}, opts.MaxRefreshes),
		loading:    make(chan struct{}, opts.MaxLoads),
		versions:   keyVersions(opts.Version),
		reused:     newReuse[V](opts.ReuseDecoded),
		tr:         newTracer(opts.TracerProvider, opts.Name),
		near:       nr,
		deadlines:  newDeadlines(opts.Timeout),
	}
	c.invalidated = []string{c.versions}
	for _, v := range opts.InvalidateVersions {
		c.invalidated = append(c.invalidated, keyVersions(v))
	}
	c.base, c.cancel = context.WithCancel(context.Background())
	if !opts.noClockSync {
		c.syncClock(c.base)
		c.spawn(c.keepClock)
	}
	c.SetStrategy(opts.Strategy)
	c.SetBeta(opts.Beta)
	return c, nil
}

// checkDeadlines refuses a go-redis client that ignores context deadlines,
// or an AutoPipeliner of one: its read and write timeouts alone do not
// bound a dial to an unreachable host, nor the client's retries, so such a
// client could hold a call far beyond Timeout.
func checkDeadlines(rdb redis.UniversalClient) error {
	var ctxOK bool
	switch c := rdb.(type) {
	case *redis.Client:
		ctxOK = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		ctxOK = c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		ctxOK = c.Options().ContextTimeoutEnabled
	case *redis.AutoPipeliner:
		ok, known := autoPipelinerDeadlines(c)
		if !known {
			return errors.New("cannot tell whether the client behind the AutoPipeliner honours context deadlines: " +
				"give New the client itself with Options.AutoPipeline")
		}
		ctxOK = ok
	default:
		return nil // another client type must honour deadlines itself
	}
	if !ctxOK {
		return errors.New("the Redis client ignores context deadlines, so an unreachable or paused server could hold a call beyond Timeout: " +
			"set ContextTimeoutEnabled in its options")
	}
	return nil
}

// autoPipelinerDeadlines reports the ContextTimeoutEnabled option of the
// client behind ap, which go-redis (v9.22, v9.23) keeps unexported: the
// field pipeliner holds the client, whose opt field holds its options.
// known is false when the fields are not found. lockx has a twin, kept so
// that each package copies alone.
func autoPipelinerDeadlines(ap *redis.AutoPipeliner) (enabled, known bool) {
	if ap == nil {
		return false, false
	}
	defer func() {
		if recover() != nil { // a nil embedded pointer on the way
			enabled, known = false, false
		}
	}()
	client := reflect.ValueOf(ap).Elem().FieldByName("pipeliner")
	for client.IsValid() && (client.Kind() == reflect.Interface || client.Kind() == reflect.Pointer) {
		if client.IsNil() {
			return false, false
		}
		client = client.Elem()
	}
	if client.Kind() != reflect.Struct {
		return false, false
	}
	opt := client.FieldByName("opt")
	if opt.Kind() != reflect.Pointer || opt.IsNil() {
		return false, false
	}
	f := opt.Elem().FieldByName("ContextTimeoutEnabled")
	if f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}

// Name is the cache's class name, as given in Options.
func (c *Cache[V]) Name() string { return c.opts.Name }

// Strategy returns the strategy in use.
func (c *Cache[V]) Strategy() Strategy { return c.strategy.Load().(Strategy) }

// SetStrategy switches the strategy for all later reads; reads in progress
// finish under the old one. An unknown strategy is ignored and reported.
func (c *Cache[V]) SetStrategy(s Strategy) error {
	if _, err := ParseStrategy(string(s)); err != nil {
		return err
	}
	c.strategy.Store(s)
	c.m.setStrategy(s)
	return nil
}

// Beta returns the default XFetch beta.
func (c *Cache[V]) Beta() float64 { return math.Float64frombits(c.beta.Load()) }

// SetBeta sets the XFetch beta of later reads: as Options.Beta, a positive
// scale of how early refreshes start. 0 is refused like a negative,
// infinite or NaN value: early refresh is turned off one way,
// SetStrategy(TTL). With SetStrategy it is the demo's run-time switch (the
// admin API turns it); a service sets Options.Beta.
func (c *Cache[V]) SetBeta(beta float64) error {
	if beta <= 0 || math.IsInf(beta, 0) || math.IsNaN(beta) {
		return fmt.Errorf("cachex: %s: beta must be a finite number > 0 (SetStrategy(TTL) turns early refresh off), got %v", c.opts.Name, beta)
	}
	c.beta.Store(math.Float64bits(beta))
	return nil
}

// Close stops background refreshes and waits for them and for recomputes in
// flight to end; the key locks they hold are released. Reads that start
// after Close has begun return ErrClosed; reads in progress finish.
func (c *Cache[V]) Close() {
	c.life.Lock()
	c.closed = true
	c.life.Unlock()
	c.cancel()
	c.wg.Wait()
}

// isClosed reports whether Close has begun.
func (c *Cache[V]) isClosed() bool {
	c.life.RLock()
	defer c.life.RUnlock()
	return c.closed
}

// spawn runs f on a goroutine that Close waits for; once Close has begun it
// runs f on the caller's goroutine instead (its context is cancelled by then,
// so it ends soon), so that waiters of a flight it lands are never left
// hanging.
func (c *Cache[V]) spawn(f func()) {
	c.life.RLock()
	if c.closed {
		c.life.RUnlock()
		f()
		return
	}
	c.wg.Add(1)
	c.life.RUnlock()
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// redisKey is the key of a value; lockKey(redisKey) is its lock. The braces
// make both one hash slot, so Lua can touch both in Redis Cluster. The
// versions after them keep the entries of two versions of a service (or of
// cachex's envelope) apart during a rolling upgrade.
func (c *Cache[V]) redisKey(key string) string { return "{" + c.opts.Prefix + key + "}" + c.versions }

// keyVersions is what follows a key's braces: the envelope's version and the
// value's (Options.Version).
func keyVersions(valueVersion string) string {
	return ":e" + strconv.Itoa(envVersion) + "." + valueVersion
}

func lockKey(redisKey string) string { return redisKey + ":lock" }

// newToken returns a random lock token.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// redisCall runs f with the cache's Redis timeout and records its outcome for
// the breaker and the metrics. It returns f's error; a redis.Nil is success.
//
// While the breaker is half-open the call is its probe: it runs detached from
// the caller's cancellation, under Timeout alone, so that its outcome is
// recorded even when the caller has given up (a probe that recorded nothing
// would keep the breaker open for good).
func (c *Cache[V]) redisCall(ctx context.Context, op string, f func(ctx context.Context, l lane) error) error {
	probe := c.brk.open()
	callCtx := ctx
	if probe {
		callCtx = context.WithoutCancel(ctx)
	}
	l := c.conn.enter()
	defer l.leave()
	tctx, cancel := c.deadlines.bound(callCtx)
	err := f(tctx, l)
	cancel()
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		c.brk.success()
	case !probe && ctx.Err() != nil:
		// The caller gave up; that says nothing about Redis.
	default:
		c.m.redisErrs.WithLabelValues(op).Inc()
		var reply redis.Error
		if errors.As(err, &reply) {
			c.brk.success() // Redis answered, with an error reply
		} else {
			c.brk.failure()
		}
	}
	return err
}

// unreachable reports whether err means Redis could not be reached (as
// opposed to a miss or an error reply).
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var reply redis.Error // redis.Nil is one too
	return !errors.As(err, &reply)
}

// decode turns an envelope's payload into a value; a negative entry yields
// ErrNotFound.
func (c *Cache[V]) decode(e entry) (V, error) {
	if e.negative {
		var zero V
		return zero, ErrNotFound
	}
	return c.codec.Unmarshal(e.payload)
}

// encode builds the envelope for a freshly computed value (or a negative
// answer) and returns it with the Redis TTL to store it under.
func (c *Cache[V]) encode(v V, notFound bool, delta time.Duration) ([]byte, time.Duration, error) {
	now := c.now()
	e := entry{computedAt: now, delta: delta, negative: notFound}
	ttl := c.opts.TTL
	keep := ttl + c.opts.Grace
	if notFound {
		ttl, keep = c.opts.NegativeTTL, c.opts.NegativeTTL
	} else {
		p, err := c.codec.Marshal(v)
		if err != nil {
			return nil, 0, fmt.Errorf("cachex: %s: encode: %w", c.opts.Name, err)
		}
		e.payload = p
	}
	e.expiry = now.Add(ttl)
	return encodeEntry(make([]byte, 0, envHeaderSize+len(e.payload)), e), keep, nil
}

// errNoLoadSlot: an early refresh found every loader slot busy.
var errNoLoadSlot = errors.New("cachex: every loader slot is busy")

// loadSlot takes one of the MaxLoads slots, waiting until ctx ends (a
// cachex.load_slot span, when traced); an early refresh does not wait. The
// slot is returned by calling the function.
func (c *Cache[V]) loadSlot(ctx context.Context, reason string) (func(), error) {
	release := func() { <-c.loading }
	select {
	case c.loading <- struct{}{}:
		return release, nil
	default:
		if reason == reasonEarly {
			return nil, errNoLoadSlot
		}
	}
	_, span := c.tr.start(ctx, spanLoadSlot)
	select {
	case c.loading <- struct{}{}:
		end(span, nil)
		return release, nil
	case <-ctx.Done():
		end(span, ctx.Err())
		return nil, ctx.Err()
	}
}

// compute calls the loader, timing it (the XFetch delta) and counting it;
// attrs go on its span.
func (c *Cache[V]) compute(ctx context.Context, load func(context.Context) (V, error), reason string, attrs ...attribute.KeyValue) (V, time.Duration, error) {
	release, err := c.loadSlot(ctx, reason)
	if err != nil {
		var zero V
		return zero, 0, err
	}
	defer release()
	v, delta, err := timeLoad(c, ctx, reason, 1, load, attrs...)
	c.countRecomputes(reason, 1, err)
	return v, delta, err
}

// countRecomputes counts n recomputes done by one loader call that ended
// with err; a not-found answer is a success.
func (c *Cache[V]) countRecomputes(reason string, n int, err error) {
	c.m.recomputes[[2]string{reason, loadStatus(err)}].Add(float64(n))
}

// loadStatus is the status of a loader call that ended with err: ok (a
// not-found answer too), error or panic.
func loadStatus(err error) string {
	switch {
	case errors.Is(err, ErrLoaderPanic):
		return "panic"
	case err != nil && !errors.Is(err, ErrNotFound):
		return "error"
	}
	return "ok"
}

// detached returns a context for work that outlives the caller: it keeps the
// caller's values, not its cancellation, and ends at timeout or Close.
func (c *Cache[V]) detached(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	stop := context.AfterFunc(c.base, cancel)
	return ctx, func() { stop(); cancel() }
}
