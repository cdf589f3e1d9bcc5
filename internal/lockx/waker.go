package lockx

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// waker delivers release messages to waiting Acquire calls. It listens on
// every server, one Pub/Sub connection each, because each release publishes
// on every server it runs on: a paused or unreachable minority delays no
// wake-up. Waiters only change a map; a goroutine per server does the
// network I/O, each call bounded by Timeout. A message is a release id after a release (the same on every
// server of one release, so that it wakes once), "holder:token" after a
// hand-over, or empty after a hand-over's plain release.
type waker struct {
	subs    []*subscription
	timeout time.Duration

	mu       sync.Mutex
	channels map[string]*listeners
	started  bool
	closed   bool

	done chan struct{} // closed by close
}

// listeners are the waiters of one channel and the release ids already
// delivered on it (the newest last, at most twice as many as servers).
type listeners struct {
	waiters map[chan int64]string // waiter -> its holder token
	seen    []string
}

// subscription is the waker's Pub/Sub connection to one server.
type subscription struct {
	rdb  redis.UniversalClient
	kick chan struct{} // the set of channels changed (buffered: one pending kick)
}

func newWaker(nodes []redis.UniversalClient, timeout time.Duration) *waker {
	w := &waker{timeout: timeout, channels: map[string]*listeners{}, done: make(chan struct{})}
	for _, rdb := range nodes {
		w.subs = append(w.subs, &subscription{rdb: rdb, kick: make(chan struct{}, 1)})
	}
	return w
}

// releaseID returns a new release id: it never contains ':', which
// distinguishes it from a hand-over.
func releaseID() string { return strconv.FormatUint(rand.Uint64(), 36) }

// A registration is one waiter's place on a channel. Its c receives
// (without blocking the sender; one pending value at most) 0 after a plain
// release and the fencing token when the lock was handed to the waiter's
// holder token. A hand-over replaces a pending 0.
type registration struct {
	w  *waker
	ch string
	c  chan int64
}

// wait registers holder for messages on ch, until stop.
func (w *waker) wait(ch, holder string) *registration {
	r := &registration{w: w, ch: ch, c: make(chan int64, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return r
	}
	ls := w.channels[ch]
	if ls == nil {
		ls = &listeners{waiters: map[chan int64]string{}}
		w.channels[ch] = ls
		w.changed()
	}
	ls.waiters[r.c] = holder
	if !w.started {
		w.started = true
		for _, s := range w.subs {
			go w.run(s)
		}
	}
	return r
}

// stop ends the registration.
func (r *registration) stop() {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	ls := w.channels[r.ch]
	if ls == nil {
		return
	}
	delete(ls.waiters, r.c)
	if len(ls.waiters) == 0 {
		delete(w.channels, r.ch)
		w.changed()
	}
}

// changed tells the subscriber goroutines to bring their subscriptions up
// to date. Called with w.mu held; never blocks.
func (w *waker) changed() {
	for _, s := range w.subs {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// run keeps s's subscription equal to the channels that have waiters: it
// subscribes and unsubscribes as they come and go, and tries again a moment
// later when a call fails.
func (w *waker) run(s *subscription) {
	ps := s.rdb.Subscribe(context.Background())
	defer ps.Close()
	go w.deliver(ps.Channel())
	subscribed := map[string]bool{}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-s.kick:
		case <-retry.C:
		}
		var add, drop []string
		w.mu.Lock()
		for ch := range w.channels {
			if !subscribed[ch] {
				add = append(add, ch)
			}
		}
		for ch := range subscribed {
			if w.channels[ch] == nil {
				drop = append(drop, ch)
			}
		}
		w.mu.Unlock()
		ok := w.apply(ps.Subscribe, add) && w.apply(ps.Unsubscribe, drop)
		for _, ch := range add {
			subscribed[ch] = ok
		}
		if ok {
			for _, ch := range drop {
				delete(subscribed, ch)
			}
		} else {
			retry.Reset(max(w.timeout, 50*time.Millisecond))
		}
	}
}

// apply runs a subscription change, bounded by Timeout.
func (w *waker) apply(f func(context.Context, ...string) error, chans []string) bool {
	if len(chans) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	return f(ctx, chans...) == nil
}

// deliver passes a hand-over to the waiter it names, and wakes one waiter of
// this process per plain release (once, although every server of the
// release sends it): the lock can go to one holder only, and waking them
// all would make every waiter retry at once (quadratic attempts under
// contention). A waiter that loses its retry to another process waits for
// the next release or its backoff.
func (w *waker) deliver(msgs <-chan *redis.Message) {
	for m := range msgs {
		w.mu.Lock()
		if ls := w.channels[m.Channel]; ls != nil {
			w.deliverTo(ls, m.Payload)
		}
		w.mu.Unlock()
	}
}

// deliverTo delivers one message to ls. Called with w.mu held.
func (w *waker) deliverTo(ls *listeners, payload string) {
	if holder, token, ok := handedTo(payload); ok {
		for c, h := range ls.waiters {
			if h == holder {
				select { // replace a pending plain wake-up
				case <-c:
				default:
				}
				c <- token
				return
			}
		}
		return
	}
	if payload != "" {
		if slices.Contains(ls.seen, payload) {
			return // another server's copy of a release already delivered
		}
		if len(ls.seen) == 2*len(w.subs) {
			ls.seen = ls.seen[1:]
		}
		ls.seen = append(ls.seen, payload)
	}
	for c := range ls.waiters {
		select {
		case c <- 0:
			return
		default: // already signalled: wake another
		}
	}
}

// handedTo parses a hand-over message "holder:token".
func handedTo(payload string) (holder string, token int64, ok bool) {
	holder, num, found := strings.Cut(payload, ":")
	if !found {
		return "", 0, false
	}
	token, err := strconv.ParseInt(num, 10, 64)
	return holder, token, err == nil && token > 0
}

// close tells the subscriber goroutines to close their subscriptions and
// end. It does not wait for them: with a paused server, go-redis may hold a
// subscription's connection for its dial and read timeouts.
func (w *waker) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.done)
	}
	return nil
}
