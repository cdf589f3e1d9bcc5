package lockx

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// waker delivers release messages to waiting Acquire calls, so a waiter
// retries as soon as the holder releases instead of sleeping out its backoff.
// One Pub/Sub connection per Locker, subscribed only to the channels that
// have waiters. If the subscription fails, waiters fall back to polling.
//
// A message is empty after a plain release, or "holder:token" when the lock
// was handed over to a queued waiter (Options.HandOver).
type waker struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	ps      *redis.PubSub
	waiters map[string]map[chan int64]string // channel -> waiter -> its holder token
	closed  bool
}

func newWaker(rdb redis.UniversalClient) *waker {
	return &waker{rdb: rdb, waiters: map[string]map[chan int64]string{}}
}

// wait registers holder for messages on ch. The returned channel receives
// (without blocking the sender; one pending value at most) 0 after a plain
// release and the fencing token when the lock was handed to holder, until
// stop is called. A hand-over replaces a pending 0.
func (w *waker) wait(ch, holder string) (<-chan int64, func()) {
	c := make(chan int64, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return c, func() {}
	}
	set := w.waiters[ch]
	if set == nil {
		set = map[chan int64]string{}
		w.waiters[ch] = set
		w.subscribe(ch)
	}
	set[c] = holder
	return c, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(set, c)
		if len(set) == 0 && w.waiters[ch] != nil {
			delete(w.waiters, ch)
			if w.ps != nil && !w.closed {
				_ = w.ps.Unsubscribe(context.Background(), ch)
			}
		}
	}
}

// subscribe adds ch to the subscription, starting it on first use. Called
// with w.mu held.
func (w *waker) subscribe(ch string) {
	if w.ps == nil {
		w.ps = w.rdb.Subscribe(context.Background(), ch)
		go w.deliver(w.ps.Channel())
		return
	}
	_ = w.ps.Subscribe(context.Background(), ch)
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

func (w *waker) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.ps == nil {
		return nil
	}
	return w.ps.Close()
}
