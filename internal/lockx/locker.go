package lockx

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Locker takes named, fenced locks on one Redis server or, given several
// independent servers, on a Redlock quorum of them. It is safe for
// concurrent use.
type Locker struct {
	nodes   []redis.UniversalClient
	bounded []bool // the node's client bounds every call by its own timeouts
	quorum  int
	opts    Options
	m       *metrics
	scripts scripts
	waker   *waker
}

// New returns a Locker over nodes: one server, or N independent masters for
// Redlock (a lock needs N/2+1 of them). Every client must honour context
// deadlines (redis.Options.ContextTimeoutEnabled) or have read and write
// timeouts within Options.Timeout, so a dead node cannot stall a call.
func New(nodes []redis.UniversalClient, opts Options) (*Locker, error) {
	if len(nodes) == 0 {
		return nil, errors.New("lockx: New needs at least one Redis client")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.HandOver && len(nodes) > 1 {
		return nil, fmt.Errorf("lockx: %s: HandOver needs a single server (a quorum cannot agree on whom to hand a lock)", opts.Name)
	}
	bounded := make([]bool, len(nodes))
	for i, n := range nodes {
		if n == nil {
			return nil, fmt.Errorf("lockx: %s: client %d is nil", opts.Name, i)
		}
		if bounded[i], err = checkTimeouts(n, opts.Timeout); err != nil {
			return nil, fmt.Errorf("lockx: %s: client %d: %w", opts.Name, i, err)
		}
	}
	m, err := newMetrics(opts.Registerer, opts.Name)
	if err != nil {
		return nil, err
	}
	return &Locker{
		nodes:   nodes,
		bounded: bounded,
		quorum:  len(nodes)/2 + 1,
		opts:    opts,
		m:       m,
		scripts: newScripts(),
		waker:   newWaker(nodes[0]),
	}, nil
}

// Close stops the Locker's wake-up subscription. Locks already held stay
// valid until released.
func (l *Locker) Close() error { return l.waker.close() }

// keys of a resource: the lock, its fence counter, the HandOver queue and
// deadlines, all in one hash slot, and its wake-up channel.
func (l *Locker) lockKey(resource string) string { return "{" + l.opts.Prefix + resource + "}" }
func fenceKey(lockKey string) string             { return lockKey + ":fence" }
func channel(lockKey string) string              { return lockKey + ":released" }
func queueKeys(lockKey string) []string {
	return []string{lockKey, fenceKey(lockKey), lockKey + ":queue", lockKey + ":waiting"}
}

// Acquire takes the lock on resource, retrying with jittered backoff (and
// waking early when the holder releases) until it holds it, the wait budget
// (Options.Wait) is spent — ErrNotAcquired — or ctx ends — ctx.Err().
//
// The returned Lock carries a fencing token that is larger than that of any
// earlier holder of the resource, and a context that ends as soon as the
// lock is lost or can no longer be proven held (cause ErrLost). Its context
// is a child of ctx. Release it when done.
func (l *Locker) Acquire(ctx context.Context, resource string) (*Lock, error) {
	start := time.Now()
	key := l.lockKey(resource)
	holder := newHolder()
	deadline := start.Add(l.opts.Wait)
	pause := l.opts.RetryMin
	var wake <-chan int64
	var lastErr error
	var tried time.Time // when the last failed attempt was sent
	for {
		l.m.attempts.Inc()
		tried = time.Now()
		lk, err := l.try(ctx, key, holder, time.Until(deadline))
		if lk != nil {
			return l.acquired(ctx, start, lk), nil
		}
		if err != nil {
			lastErr = err
		}
		if ctx.Err() != nil {
			l.leave(key, holder)
			l.giveUp(start, l.m.failed)
			return nil, ctx.Err()
		}
		left := time.Until(deadline)
		if left <= 0 {
			l.leave(key, holder)
			if lastErr != nil && errors.Is(lastErr, errNoQuorum) {
				l.giveUp(start, l.m.failed)
				return nil, fmt.Errorf("%w: %s: %w", ErrNotAcquired, resource, lastErr)
			}
			l.giveUp(start, l.m.timeout)
			return nil, fmt.Errorf("%w: %s held by another for %v", ErrNotAcquired, resource, l.opts.Wait)
		}
		if wake == nil {
			// Listen for the holder's release, then try once more at once:
			// it may have released before the subscription was in place.
			var stop func()
			wake, stop = l.waker.wait(channel(key), holder)
			defer stop()
			continue
		}
		jittered := pause/2 + rand.N(pause/2+1)
		t := time.NewTimer(min(jittered, left))
		select {
		case <-ctx.Done():
			t.Stop()
		case token := <-wake:
			t.Stop()
			if token > 0 {
				if lk := l.handedOver(ctx, key, holder, token, tried); lk != nil {
					return l.acquired(ctx, start, lk), nil
				}
			}
		case <-t.C:
		}
		pause = min(2*pause, l.opts.RetryMax)
	}
}

// acquired counts a successful Acquire and starts the lock's timers.
func (l *Locker) acquired(ctx context.Context, start time.Time, lk *Lock) *Lock {
	l.m.acquired.Inc()
	l.m.wait.Observe(time.Since(start).Seconds())
	lk.start(ctx)
	return lk
}

// handedOver returns the lock a release handed to holder (HandOver), or nil
// if it cannot be proven held. The hand-over set the lock's TTL after the
// waiter's last failed attempt was sent (tried), so validity counts from
// then; when that leaves too little for the watchdog's first extension, the
// lock is extended once before it is returned.
func (l *Locker) handedOver(ctx context.Context, key, holder string, token int64, tried time.Time) *Lock {
	valid := func(from time.Time) time.Time { return from.Add(l.opts.TTL - drift(l.opts.TTL)) }
	lk := &Lock{l: l, key: key, holder: holder, token: token, validUntil: valid(tried)}
	if time.Until(lk.validUntil)-l.opts.SafetyMargin > l.opts.TTL/3+l.opts.Timeout {
		return lk
	}
	sent := time.Now()
	ok, err := l.call(ctx, 0, func(ctx context.Context, n redis.UniversalClient) (int64, error) {
		return l.scripts.extend.Run(ctx, n, []string{key}, holder, l.opts.TTL.Milliseconds()).Int64()
	})
	if err != nil || ok != 1 {
		return nil // gone, or unknown: the caller's next attempt (or leave) settles it
	}
	lk.validUntil = valid(sent)
	return lk
}

// leave takes a waiter that gives up off the HandOver queue, passing the
// lock on if it was handed to it meanwhile.
func (l *Locker) leave(key, holder string) {
	if l.opts.HandOver {
		l.releaseAll(key, holder)
	}
}

func (l *Locker) giveUp(start time.Time, result interface{ Inc() }) {
	result.Inc()
	l.m.wait.Observe(time.Since(start).Seconds())
}

// errNoQuorum reports an attempt on which too few servers answered.
var errNoQuorum = errors.New("too few Redis servers answered for a quorum")

// try makes one attempt on every node at once. It returns a held Lock, or
// nil and the reason when it failed; it leaves nothing behind on failure.
// With HandOver, a failed attempt queues holder for left.
func (l *Locker) try(ctx context.Context, key, holder string, left time.Duration) (*Lock, error) {
	sent := time.Now()
	tokens, errs := l.each(ctx, func(ctx context.Context, n redis.UniversalClient) (int64, error) {
		if l.opts.HandOver {
			return l.scripts.queuedAcquire.Run(ctx, n, queueKeys(key), holder, l.opts.TTL.Milliseconds(), max(left.Milliseconds(), 1)).Int64()
		}
		return l.scripts.acquire.Run(ctx, n, []string{key, fenceKey(key)}, holder, l.opts.TTL.Milliseconds()).Int64()
	})
	won, answered := 0, 0
	var fence int64
	for i, t := range tokens {
		if errs[i] == nil {
			answered++
		}
		if t > 0 {
			won++
			fence = max(fence, t)
		}
	}
	validity := l.opts.TTL - time.Since(sent) - drift(l.opts.TTL)
	if won >= l.quorum && validity > 0 && l.fence(ctx, key, tokens, fence) {
		return &Lock{l: l, key: key, holder: holder, token: fence, validUntil: sent.Add(l.opts.TTL - drift(l.opts.TTL))}, nil
	}
	if won > 0 || answered < len(l.nodes) {
		l.releaseAll(key, holder) // undo partial wins (and writes that may have landed)
	}
	if answered < l.quorum {
		return nil, fmt.Errorf("%w: %w", errNoQuorum, errors.Join(errs...))
	}
	return nil, nil
}

// fence makes the token returned to the new holder larger than any later
// holder's could be smaller than: it raises the counters of the nodes that
// issued a smaller token to fence, and succeeds when a quorum of nodes have
// a counter of at least fence. Any two quorums share a node, so the next
// holder's INCR on that node yields more than fence.
func (l *Locker) fence(ctx context.Context, key string, tokens []int64, fence int64) bool {
	if len(l.nodes) == 1 {
		return true
	}
	atLeast := 0
	var lower []int
	for i, t := range tokens {
		switch {
		case t == fence:
			atLeast++
		case t > 0:
			lower = append(lower, i)
		}
	}
	if atLeast >= l.quorum {
		return true
	}
	raised, errs := l.on(ctx, lower, func(ctx context.Context, n redis.UniversalClient) (int64, error) {
		return l.scripts.raise.Run(ctx, n, []string{fenceKey(key)}, fence).Int64()
	})
	for i := range raised {
		if errs[i] == nil && raised[i] >= fence {
			atLeast++
		}
	}
	return atLeast >= l.quorum
}

// releaseAll deletes the lock on every node that holds it for holder and
// wakes the waiters (with HandOver: hands it to the first queued waiter).
// It is bounded by Timeout and ignores the caller's cancellation: a lock
// must not be left behind because a request ended.
func (l *Locker) releaseAll(key, holder string) (released int, errs []error) {
	results, errs := l.each(context.Background(), func(ctx context.Context, n redis.UniversalClient) (int64, error) {
		if l.opts.HandOver {
			return l.scripts.grant.Run(ctx, n, queueKeys(key), holder, channel(key), l.opts.TTL.Milliseconds()).Int64()
		}
		return l.scripts.release.Run(ctx, n, []string{key}, holder, channel(key)).Int64()
	})
	for _, r := range results {
		released += min(int(r), 1)
	}
	return released, errs
}

// each runs f on every node at once, each call bounded by Timeout.
func (l *Locker) each(ctx context.Context, f func(context.Context, redis.UniversalClient) (int64, error)) ([]int64, []error) {
	if len(l.nodes) == 1 { // no goroutine for the common case
		r, err := l.call(ctx, 0, f)
		return []int64{r}, []error{err}
	}
	all := make([]int, len(l.nodes))
	for i := range all {
		all[i] = i
	}
	return l.on(ctx, all, f)
}

// on runs f on the nodes with the given indexes at once; results and errors
// are in the order of idx.
func (l *Locker) on(ctx context.Context, idx []int, f func(context.Context, redis.UniversalClient) (int64, error)) ([]int64, []error) {
	results, errs := make([]int64, len(idx)), make([]error, len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Go(func() { results[j], errs[j] = l.call(ctx, i, f) })
	}
	wg.Wait()
	return results, errs
}

// call runs f on node i within Timeout: by a context deadline, unless the
// node's client bounds the call by its own read and write timeouts.
func (l *Locker) call(ctx context.Context, i int, f func(context.Context, redis.UniversalClient) (int64, error)) (int64, error) {
	if !l.bounded[i] {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.opts.Timeout)
		defer cancel()
	}
	r, err := f(ctx, l.nodes[i])
	return r, ignoreNil(err)
}

// ignoreNil treats a nil reply as an answer, not an error.
func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// newHolder returns a random holder token: the value stored under the lock
// key, so only its holder can extend or release it.
func newHolder() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkTimeouts makes sure a paused or unreachable server cannot hold a call
// longer than timeout. bounded reports that the client's own read and write
// timeouts ensure it, so calls need no context deadline of their own.
func checkTimeouts(rdb redis.UniversalClient, timeout time.Duration) (bounded bool, err error) {
	var ctxOK bool
	var read, write time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		ctxOK, read, write = o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout
	case *redis.ClusterClient:
		o := c.Options()
		ctxOK, read, write = o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout
	case *redis.Ring:
		o := c.Options()
		ctxOK, read, write = o.ContextTimeoutEnabled, o.ReadTimeout, o.WriteTimeout
	default:
		return false, nil
	}
	bounded = read > 0 && read <= timeout && write > 0 && write <= timeout
	if ctxOK || bounded {
		return bounded, nil
	}
	return false, fmt.Errorf("the client ignores context deadlines and its read/write timeouts (%v/%v) exceed Timeout %v: "+
		"set ContextTimeoutEnabled in its options", read, write, timeout)
}
