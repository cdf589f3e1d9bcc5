package lockx

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// nodeCall is one script call on one server.
type nodeCall func(ctx context.Context, rdb node) (int64, error)

// reply is one server's answer to a call.
type reply struct {
	node int
	val  int64
	err  error
}

// replyErrors joins the errors of the replies that failed.
func replyErrors(got []reply) error {
	errs := make([]error, 0, len(got))
	for _, r := range got {
		errs = append(errs, r.err)
	}
	return errors.Join(errs...)
}

// late are the replies of a round that had not arrived when it decided.
type late struct {
	ch     <-chan reply
	n      int
	cancel context.CancelFunc
}

// round runs call on the servers idx at once, each bounded by deadline, and
// returns as soon as decided says the replies so far settle the outcome (or
// all have answered). With minority set, the servers that have not answered
// once a quorum has (the minority) are waited for only as long again as the
// quorum took, at least RetryMin, and then the round returns unsettled: a
// silent server's vote is never waited for. Calls still pending run on;
// rest hands their replies to whoever must clean up after them. With one
// server the call runs on the caller's goroutine.
func (l *Locker) round(ctx context.Context, idx []int, deadline time.Time, minority bool, call nodeCall, decided func(got []reply, pending int) bool) ([]reply, late) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	if len(idx) == 1 {
		defer cancel()
		v, err := call(ctx, l.nodes[idx[0]])
		return []reply{{node: idx[0], val: v, err: ignoreNil(err)}}, late{}
	}
	sent := time.Now()
	ch := make(chan reply, len(idx))
	for _, i := range idx {
		go func() {
			v, err := call(ctx, l.nodes[i])
			ch <- reply{node: i, val: v, err: ignoreNil(err)}
		}()
	}
	got := make([]reply, 0, len(idx))
	var grace <-chan time.Time
	for len(got) < len(idx) {
		select {
		case r := <-ch:
			got = append(got, r)
		case <-grace:
			return got, late{ch: ch, n: len(idx) - len(got), cancel: cancel}
		}
		if decided(got, len(idx)-len(got)) {
			break
		}
		if minority && grace == nil && answered(got) >= l.quorum {
			t := time.NewTimer(max(time.Since(sent), l.opts.RetryMin))
			defer t.Stop()
			grace = t.C
		}
	}
	if len(got) == len(idx) {
		cancel()
		return got, late{}
	}
	return got, late{ch: ch, n: len(idx) - len(got), cancel: cancel}
}

// answered counts the replies that are answers, not errors.
func answered(got []reply) int {
	n := 0
	for _, r := range got {
		if r.err == nil {
			n++
		}
	}
	return n
}

// then passes the late replies to f, in the background, as they arrive
// (nil f: they are dropped). The Locker's Close waits for it.
func (r late) then(l *Locker, f func(reply)) {
	if r.n == 0 {
		return
	}
	l.background(func() {
		defer r.cancel()
		for range r.n {
			if rep := <-r.ch; f != nil {
				f(rep)
			}
		}
	})
}

// background runs f on a goroutine that Close waits for; after Close it
// runs f at once, so clean-ups still happen.
func (l *Locker) background(f func()) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		f()
		return
	}
	l.bg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.bg.Done()
		f()
	}()
}

// call runs f on node i within Timeout.
func (l *Locker) call(ctx context.Context, i int, f nodeCall) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	r, err := f(ctx, l.nodes[i])
	return r, ignoreNil(err)
}

// ignoreNil treats a nil reply as an answer, not an error.
func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
