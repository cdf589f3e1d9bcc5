package cachex

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// TestABypassingReadAfterInvalidateDoesNotJoinAnOlderLoad: instance B cannot
// reach Redis (its breaker is open) and is loading a key without it; it read
// version 1. The source changes and instance A, which reaches Redis,
// invalidates the key. A read on B that starts now cannot see A's
// tombstone; it must still not join B's load that began before it: it waits
// for that load to end (one load per key at a time) and loads version 2.
// (Found by the stampede repository's torture checker: a read on one instance, 28 ms after another
// instance's invalidation, returned version 1169 after 1170 had been
// written, while faults on a Redis master had opened its breaker.)
func TestABypassingReadAfterInvalidateDoesNotJoinAnOlderLoad(t *testing.T) {
	t.Parallel()
	node := redistest.Redis(t)
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "get", true: "batch"}[batch], func(t *testing.T) {
			ctx := context.Background()
			opts := Options{Name: "bypass-inv", Prefix: "bypass-inv-" + itoa(time.Now().UnixNano()) + ":", TTL: time.Minute}
			a, _ := newCache(t, client(t, node), JSON[string]{}, opts)
			dead := redis.NewClient(&redis.Options{Addr: redistest.FreeAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
			t.Cleanup(func() { _ = dead.Close() })
			// Nothing listens at b's address: its calls fail at once, and a
			// short Timeout only bounds a dial that would hang.
			opts.Timeout = 50 * time.Millisecond
			b, _ := newCache(t, dead, JSON[string]{}, opts)
			read := func(ctx context.Context, s *source) (string, error) {
				if !batch {
					return b.Get(ctx, "k", s.load)
				}
				got, err := b.GetMany(ctx, []string{"k"}, s.loadMany)
				return got["k"], err
			}
			s := newSource()
			first := make(chan string, 1)
			go func() { v, _ := read(ctx, s); first <- v }()
			waitFor(t, "the bypassing load to read the source", func() bool { return s.reading.Load() == 1 })
			s.version.Store(2)
			if err := a.Invalidate(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			b.loads.mu.Lock()
			older := b.loads.m["k"]
			b.loads.mu.Unlock()
			later := make(chan string, 1)
			go func() { v, _ := read(ctx, s); later <- v }()
			waitFor(t, "the later read to join a flight", func() bool {
				b.loads.mu.Lock()
				defer b.loads.mu.Unlock()
				return older.waiters == 2 || b.loads.m["k"] != older
			})
			close(s.gate) // both loads may run to their end now
			if v := <-first; v != "v1" {
				t.Errorf("the read that started first got %q, want its own v1", v)
			}
			if v := <-later; v != "v2" {
				t.Errorf("a bypassing read after another instance's Invalidate returned %q, want v2", v)
			}
			if n := s.reading.Load(); n != 2 {
				t.Errorf("%d loads, want 2: one per read, one after the other", n)
			}
		})
	}
}
