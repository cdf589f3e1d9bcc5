package cachex

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// waitersOf returns how many callers wait for key's flight (0 if none).
func waitersOf[V any](c *Cache[V], key string) int {
	c.loads.mu.Lock()
	defer c.loads.mu.Unlock()
	if f := c.loads.m[key]; f != nil {
		return f.waiters
	}
	return 0
}

// At most MaxLoads loader calls run at once; the others wait for a slot.
func TestLoadsAreBoundedPerCache(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "bound", TTL: time.Minute, MaxLoads: 2})
	l := &loader{release: make(chan struct{})}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			_, err := c.Get(context.Background(), "k"+itoa(int64(i)), l.load)
			errs <- err
		})
	}
	waitFor(t, "two loads to run", func() bool { return l.inFlight.Load() == 2 })
	if n := l.calls.Load(); n != 2 {
		t.Fatalf("%d loader calls started with MaxLoads 2", n)
	}
	close(l.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if l.maxIn.Load() != 2 || l.calls.Load() != 6 {
		t.Fatalf("%d loads at most at once and %d in all, want 2 and 6", l.maxIn.Load(), l.calls.Load())
	}
}

// blocking is a loader that waits for its context to end and reports it.
type blocking struct {
	started   chan struct{}
	cancelled chan struct{}
}

func newBlocking() *blocking {
	return &blocking{started: make(chan struct{}, 10), cancelled: make(chan struct{}, 10)}
}

func (b *blocking) load(ctx context.Context) (string, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.cancelled <- struct{}{}
	return "", ctx.Err()
}

// A load is cancelled once no caller waits for it, never while one does;
// and a caller that comes later starts a new load instead of joining the
// cancelled one.
func TestLoadIsCancelledWhenNoCallerWaits(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "cancel", TTL: time.Minute, noLease: true})
	b := newBlocking()
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { _, err := c.Get(ctx1, "k", b.load); done <- err }()
	<-b.started
	go func() { _, err := c.Get(ctx2, "k", b.load); done <- err }()
	waitFor(t, "the second caller to join", func() bool { return waitersOf(c, "k") == 2 })

	cancel1()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v, want context.Canceled", err)
	}
	select {
	case <-b.cancelled:
		t.Fatal("the load was cancelled while a caller still waited for it")
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	<-done
	select {
	case <-b.cancelled:
	case <-time.After(eventWait):
		t.Fatal("the load ran on after its last caller had gone")
	}
	// A new caller starts a new load.
	l := &loader{}
	if v, err := c.Get(context.Background(), "k", l.load); err != nil || v != "v1" {
		t.Fatalf("a later Get: %q, %v; want a fresh load", v, err)
	}
}

// The same holds for a batch: its one loader call is cancelled once no
// caller waits for any of its keys.
func TestBatchLoadIsCancelledWhenNoCallerWaits(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	c, _ := newCache(t, rdb, JSON[string]{}, Options{Name: "cancelmany", TTL: time.Minute})
	b := newBlocking()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetMany(ctx, []string{"a", "b"}, func(ctx context.Context, keys []string) (map[string]string, error) {
			_, err := b.load(ctx)
			return nil, err
		})
		done <- err
	}()
	<-b.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("GetMany: %v, want context.Canceled", err)
	}
	select {
	case <-b.cancelled:
	case <-time.After(eventWait):
		t.Fatal("the batch load ran on after its caller had gone")
	}
}
