package cachex

import (
	"context"
	"sync/atomic"
	"time"
)

// deadlines gives each Redis call a context that ends within Timeout,
// cheaply: a caller's context that already ends by then is used as it is,
// and one that is never cancelled (context.Background, WithoutCancel) gets
// a bounded view whose Done channel is shared by every call whose deadline
// falls in the same tick (Timeout/8): it closes at the tick before the
// call's deadline, never after. Only other contexts pay for a timer of
// their own (context.WithTimeout).
type deadlines struct {
	timeout time.Duration
	tick    time.Duration
	ring    []atomic.Pointer[deadlineTick]
}

// deadlineTick is a channel closed at tick index at.
type deadlineTick struct {
	at   int64
	done chan struct{}
}

func newDeadlines(timeout time.Duration) *deadlines {
	tick := max(timeout/8, time.Microsecond)
	return &deadlines{timeout: timeout, tick: tick, ring: make([]atomic.Pointer[deadlineTick], int(timeout/tick)+3)}
}

// bound returns ctx limited to end within Timeout from now, and its cancel.
func (d *deadlines) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	end := now.Add(d.timeout)
	if dl, ok := ctx.Deadline(); ok && !dl.After(end) {
		return ctx, func() {}
	}
	if ctx.Done() != nil {
		return context.WithDeadline(ctx, end)
	}
	return &boundCtx{Context: ctx, deadline: end, done: d.doneBy(end)}, func() {}
}

// doneBy returns a channel that closes at the last tick at or before end.
func (d *deadlines) doneBy(end time.Time) chan struct{} {
	at := end.UnixNano() / int64(d.tick)
	slot := &d.ring[at%int64(len(d.ring))]
	for {
		t := slot.Load()
		if t != nil && t.at == at {
			return t.done
		}
		if t != nil && t.at > at { // a later tick took the slot: use our own
			return d.newTick(at).done
		}
		nt := d.newTick(at)
		if slot.CompareAndSwap(t, nt) {
			return nt.done
		}
	}
}

func (d *deadlines) newTick(at int64) *deadlineTick {
	t := &deadlineTick{at: at, done: make(chan struct{})}
	time.AfterFunc(time.Until(time.Unix(0, at*int64(d.tick))), func() { close(t.done) })
	return t
}

// boundCtx is a never-cancelled context given a deadline.
type boundCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
}

func (c *boundCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *boundCtx) Done() <-chan struct{}       { return c.done }

func (c *boundCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
