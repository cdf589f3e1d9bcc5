package cachex

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// flight is one in-process recompute of a key that any number of callers
// wait for. Its outcome fields are written once, before done is closed.
type flight[V any] struct {
	done   chan struct{}
	seen   string            // the identity of what its leader read in Redis
	origin trace.SpanContext // the leader's span, which its waiters link to
	prev   *flight[V]        // the flight it replaced, whose load must end before its own starts
	val    V
	err    error
	result string // what the wait amounts to: resultMiss, resultStale or resultBypass

	// Guarded by flights.mu.
	waiters int   // callers waiting for it
	load    *load // the loader call that lands it; nil until started
	loading bool  // its loader call has begun (begin)
	landed  bool
}

// A load is one loader call that lands one flight (Get) or several
// (GetMany). It is cancelled once no caller waits for any of them.
type load struct {
	live   int // its flights that still have a waiter; guarded by flights.mu
	cancel context.CancelFunc
}

// flights deduplicates recomputes in this process: at most one per key is in
// flight, whether it was started by Get, GetMany or a bypass.
type flights[V any] struct {
	mu sync.Mutex
	m  map[string]*flight[V]
}

// join returns the key's flight, counting the caller as a waiter, and
// whether the caller leads it (a leader starts its load and lands it once).
// A caller joins only a flight whose leader read the same thing in Redis
// (seen), and a caller that bypasses Redis (seen is bypassSeen, it read
// nothing) only one whose loader has not begun; otherwise it starts a new
// flight, whose load waits for the older one's (after). So a read begun
// after an Invalidate, on any instance, never gets an older load's value.
func (fs *flights[V]) join(key, seen string, origin trace.SpanContext) (*flight[V], bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	old, ok := fs.m[key]
	if ok && old.seen == seen && !(seen == bypassSeen && old.loading) {
		old.waiters++
		return old, false
	}
	if fs.m == nil {
		fs.m = make(map[string]*flight[V])
	}
	f := &flight[V]{done: make(chan struct{}), waiters: 1, seen: seen, prev: old, origin: origin}
	fs.m[key] = f
	return f, true
}

// after returns once the load of the flight f replaced has ended, or ctx
// has: a leader calls it before loading.
func (f *flight[V]) after(ctx context.Context) {
	if f.prev == nil {
		return
	}
	select {
	case <-f.prev.done:
	case <-ctx.Done():
	}
	f.prev = nil
}

// begin records that the loader call of flights fls begins: a bypassing
// caller no longer joins them.
func (fs *flights[V]) begin(fls ...*flight[V]) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fls {
		f.loading = true
	}
}

// start records that one loader call, cancelled by cancel, lands the flights
// led, which must all still have their leader waiting.
func (fs *flights[V]) start(led []*flight[V], cancel context.CancelFunc) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	l := &load{live: len(led), cancel: cancel}
	for _, f := range led {
		f.load = l
	}
}

// wait returns the flight's outcome, or ctx.Err() if the caller's context
// ends first. A caller that gives up stops waiting; when the last waiter of
// every flight of a load has gone, the load is cancelled and its flights are
// forgotten, so that a later caller starts afresh instead of joining a
// cancelled load.
func (fs *flights[V]) wait(ctx context.Context, key string, f *flight[V]) (V, string, error) {
	select {
	case <-f.done:
		return f.val, f.result, f.err
	case <-ctx.Done():
	}
	fs.mu.Lock()
	if !f.landed {
		if f.waiters--; f.waiters == 0 {
			if fs.m[key] == f {
				delete(fs.m, key)
			}
			if l := f.load; l != nil {
				if l.live--; l.live == 0 {
					l.cancel()
				}
			}
		}
	}
	fs.mu.Unlock()
	var zero V
	return zero, resultMiss, ctx.Err()
}

// busy reports whether a recompute of key is in flight.
func (fs *flights[V]) busy(key string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, ok := fs.m[key]
	return ok
}

// forget makes the key's flight in progress, if any, one that no later
// caller joins: its waiters still get its outcome.
func (fs *flights[V]) forget(key string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.m, key)
}

// land publishes the outcome to every waiter and forgets the flight.
func (fs *flights[V]) land(key string, f *flight[V], val V, result string, err error) {
	fs.mu.Lock()
	if fs.m[key] == f {
		delete(fs.m, key)
	}
	f.landed = true
	fs.mu.Unlock()
	f.val, f.result, f.err = val, result, err
	close(f.done)
}
