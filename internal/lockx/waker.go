package lockx

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// waker delivers release messages to waiting Acquire calls, so a waiter
// retries as soon as the holder releases instead of sleeping out its backoff.
// One Pub/Sub connection per Locker, subscribed only to the channels that
// have waiters. If the subscription fails, waiters fall back to polling.
type waker struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	ps      *redis.PubSub
	waiters map[string]map[chan struct{}]struct{}
	closed  bool
}

func newWaker(rdb redis.UniversalClient) *waker {
	return &waker{rdb: rdb, waiters: map[string]map[chan struct{}]struct{}{}}
}

// wait registers for releases on ch. The returned channel receives (without
// blocking the sender; one pending signal at most) after each release until
// stop is called.
func (w *waker) wait(ch string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return c, func() {}
	}
	set := w.waiters[ch]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.waiters[ch] = set
		w.subscribe(ch)
	}
	set[c] = struct{}{}
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

// deliver wakes one waiter of this process per release: the lock can go to
// one holder only, and waking them all would make every waiter retry at
// once (quadratic attempts under contention). A waiter that loses its retry
// to another process waits for the next release or its backoff.
func (w *waker) deliver(msgs <-chan *redis.Message) {
	for m := range msgs {
		w.mu.Lock()
		for c := range w.waiters[m.Channel] {
			select {
			case c <- struct{}{}:
			default:
				continue // already signalled: wake another
			}
			break
		}
		w.mu.Unlock()
	}
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
