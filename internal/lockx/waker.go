package lockx

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// waker delivers release messages to waiting Acquire calls over one Pub/Sub
// connection per Locker. Waiters only change a map; a goroutine of its own
// does the network I/O, each call bounded by Timeout, so a paused server
// delays wake-ups, never a waiter (docs/lockx.md, "The algorithm", Waiting).
// A message is empty after a release, "holder:token" after a hand-over.
type waker struct {
	rdb     redis.UniversalClient
	timeout time.Duration

	mu      sync.Mutex
	waiters map[string]map[chan int64]string // channel -> waiter -> its holder token
	started bool
	closed  bool

	kick chan struct{} // the set of channels changed (buffered: one pending kick)
	done chan struct{} // closed by close
}

func newWaker(rdb redis.UniversalClient, timeout time.Duration) *waker {
	return &waker{
		rdb:     rdb,
		timeout: timeout,
		waiters: map[string]map[chan int64]string{},
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

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
	set := w.waiters[ch]
	if set == nil {
		set = map[chan int64]string{}
		w.waiters[ch] = set
		w.changed()
	}
	set[r.c] = holder
	if !w.started {
		w.started = true
		go w.run()
	}
	return r
}

// stop ends the registration.
func (r *registration) stop() {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.waiters[r.ch]
	delete(set, r.c)
	if len(set) == 0 && set != nil {
		delete(w.waiters, r.ch)
		w.changed()
	}
}

// changed tells the subscriber goroutine to bring the subscription up to
// date. Called with w.mu held; never blocks.
func (w *waker) changed() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run keeps the subscription equal to the channels that have waiters: it
// subscribes and unsubscribes as they come and go, and tries again a moment
// later when a call fails.
func (w *waker) run() {
	ps := w.rdb.Subscribe(context.Background())
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
		case <-w.kick:
		case <-retry.C:
		}
		var add, drop []string
		w.mu.Lock()
		for ch := range w.waiters {
			if !subscribed[ch] {
				add = append(add, ch)
			}
		}
		for ch := range subscribed {
			if w.waiters[ch] == nil {
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
// this process per plain release: the lock can go to one holder only, and
// waking them all would make every waiter retry at once (quadratic attempts
// under contention). A waiter that loses its retry to another process waits
// for the next release or its backoff.
func (w *waker) deliver(msgs <-chan *redis.Message) {
	for m := range msgs {
		w.mu.Lock()
		if holder, token, ok := handedTo(m.Payload); ok {
			for c, h := range w.waiters[m.Channel] {
				if h == holder {
					select { // replace a pending plain wake-up
					case <-c:
					default:
					}
					c <- token
					break
				}
			}
		} else {
			for c := range w.waiters[m.Channel] {
				select {
				case c <- 0:
				default:
					continue // already signalled: wake another
				}
				break
			}
		}
		w.mu.Unlock()
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

// close tells the subscriber goroutine to close the subscription and end.
// It does not wait for it: with a paused server, go-redis may hold the
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
