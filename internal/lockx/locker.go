package lockx

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A Locker takes named, fenced locks on one Redis server or, given several
// independent servers, on a Redlock quorum of them. It is safe for
// concurrent use.
type Locker struct {
	nodes   []node
	all     []int // the indexes of nodes
	quorum  int
	opts    Options
	m       *metrics
	tr      *tracer // Options.TracerProvider; nil when off
	scripts scripts
	waker   *waker

	mu     sync.Mutex // guards closed, and bg.Add against Close's bg.Wait
	closed bool
	bg     sync.WaitGroup // clean-ups of slow servers still running
}

// New returns a Locker over nodes: one server, or N independent masters for
// Redlock (a lock needs N/2+1 of them). Every call to a server carries a
// context deadline of Options.Timeout, so New refuses a *redis.Client,
// *redis.ClusterClient or *redis.Ring that ignores context deadlines
// (redis.Options.ContextTimeoutEnabled false), and an *redis.AutoPipeliner
// of one: with it, dialling, pool waits, retries, reads and writes all end
// at the deadline. Other client types must honour context deadlines
// themselves.
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
	all := make([]int, len(nodes))
	conns := make([]node, len(nodes))
	for i, n := range nodes {
		if n == nil {
			return nil, fmt.Errorf("lockx: %s: client %d is nil", opts.Name, i)
		}
		if err := checkDeadlines(n); err != nil {
			return nil, fmt.Errorf("lockx: %s: client %d: %w", opts.Name, i, err)
		}
		if conns[i], err = newNode(n); err != nil {
			return nil, fmt.Errorf("lockx: %s: client %d: %w", opts.Name, i, err)
		}
		all[i] = i
	}
	m, err := newMetrics(opts.Registerer, opts.Name)
	if err != nil {
		return nil, err
	}
	return &Locker{
		nodes:   conns,
		all:     all,
		quorum:  len(nodes)/2 + 1,
		opts:    opts,
		m:       m,
		tr:      newTracer(opts.TracerProvider, opts.Name),
		scripts: newScripts(),
		waker:   newWaker(nodes, opts.Timeout),
	}, nil
}

// Close stops the Locker's wake-up subscriptions and waits for the clean-ups
// of slow servers still running (each bounded by Timeout, or twice Timeout
// where Release waits for a late acquire reply first). Locks already
// held stay valid until released.
func (l *Locker) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	err := l.waker.close()
	l.bg.Wait()
	return err
}

// keys of a resource: the lock, its fence counter, the HandOver queue and
// deadlines, all in one hash slot, and its wake-up channel.
func (l *Locker) lockKey(resource string) string { return "{" + l.opts.Prefix + resource + "}" }
func fenceKey(lockKey string) string             { return lockKey + ":fence" }
func channel(lockKey string) string              { return lockKey + ":released" }
func queueKeys(lockKey string) []string {
	return []string{lockKey, fenceKey(lockKey), lockKey + ":queue", lockKey + ":waiting"}
}

// releaseOn deletes the lock on server i if it is set to holder, waking the
// waiters (with HandOver: handing it to the first queued waiter, and taking
// holder off the queue). It is bounded by Timeout and ignores ctx's
// cancellation: a lock must not be left behind because a request ended.
func (l *Locker) releaseOn(ctx context.Context, key, holder string, i int) (int64, error) {
	return l.call(context.WithoutCancel(ctx), i, l.releaseCall(key, holder))
}

// releaseCall is the release script for holder: one release, whose wake-up
// messages carry one release id on every server it runs on.
func (l *Locker) releaseCall(key, holder string) nodeCall {
	id := releaseID()
	return func(ctx context.Context, n node) (int64, error) {
		if l.opts.HandOver {
			return n.run(ctx, l.scripts.grant, queueKeys(key), holder, channel(key), l.opts.TTL.Milliseconds(), fenceExpiry(l.opts.TTL))
		}
		return n.run(ctx, l.scripts.release, []string{key}, holder, channel(key), id)
	}
}

// newHolder returns a random holder token: the value stored under the lock
// key, so only its holder can extend or release it.
func newHolder() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkDeadlines refuses a go-redis client that ignores context deadlines,
// or an AutoPipeliner of one: lockx bounds every call by one, and such a
// client would let a paused server hold a call for its ReadTimeout and
// retries (over an AutoPipeliner, its subscriptions and the batches behind
// a reply the caller gave up on).
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
			return errors.New("cannot tell whether the client behind the AutoPipeliner honours context deadlines: give New the client itself")
		}
		ctxOK = ok
	default:
		return nil
	}
	if !ctxOK {
		return errors.New("the client ignores context deadlines, so a paused server could hold a call beyond Timeout: " +
			"set ContextTimeoutEnabled in its options")
	}
	return nil
}

// autoPipelinerDeadlines reports the ContextTimeoutEnabled option of the
// client behind ap, which go-redis (v9.22, v9.23) keeps unexported: the
// field pipeliner holds the client, whose opt field holds its options.
// known is false when the fields are not found. cachex has a twin, kept so
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
