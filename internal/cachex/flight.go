package cachex

import (
	"context"
	"sync"
)

// flight is one in-process recompute of a key that any number of callers
// wait for. Its fields are written once, before done is closed.
type flight[V any] struct {
	done   chan struct{}
	val    V
	err    error
	result string // what the wait amounts to: resultMiss, resultStale or resultBypass
}

// wait returns the flight's outcome, or ctx.Err() if the caller's context
// ends first (the recompute goes on for the others).
func (f *flight[V]) wait(ctx context.Context) (V, string, error) {
	select {
	case <-f.done:
		return f.val, f.result, f.err
	case <-ctx.Done():
		var zero V
		return zero, resultMiss, ctx.Err()
	}
}

// flights deduplicates recomputes in this process: at most one per key is in
// flight, whether it was started by Get, GetMany or a bypass.
type flights[V any] struct {
	mu sync.Mutex
	m  map[string]*flight[V]
}

// join returns the key's flight and whether the caller leads it: a leader
// must call land exactly once.
func (fs *flights[V]) join(key string) (*flight[V], bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[key]; ok {
		return f, false
	}
	if fs.m == nil {
		fs.m = make(map[string]*flight[V])
	}
	f := &flight[V]{done: make(chan struct{})}
	fs.m[key] = f
	return f, true
}

// busy reports whether a recompute of key is in flight.
func (fs *flights[V]) busy(key string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, ok := fs.m[key]
	return ok
}

// land publishes the outcome to every waiter and forgets the flight.
func (fs *flights[V]) land(key string, f *flight[V], val V, result string, err error) {
	fs.mu.Lock()
	delete(fs.m, key)
	fs.mu.Unlock()
	f.val, f.result, f.err = val, result, err
	close(f.done)
}
