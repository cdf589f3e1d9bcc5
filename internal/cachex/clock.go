package cachex

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// now is the cache's estimate of the Redis server's clock (its clock plus
// syncClock's offset), on which every instance compares expiries
// (so instances whose clocks disagree still agree on what has expired).
func (c *Cache[V]) now() time.Time {
	return c.opts.now().Add(time.Duration(c.offset.Load()))
}

// syncClock measures the offset of the server's clock (TIME) from
// the cache's clock, taking the middle of the round trip as the moment the server
// answered: its error is at most half the round trip (plus the rounding to
// whole milliseconds, the envelope's unit). A failed call keeps the offset
// it had.
func (c *Cache[V]) syncClock(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	sent := c.opts.now()
	cmd := redis.NewTimeCmd(ctx, "time")
	l := c.conn.enter()
	defer l.leave()
	if err := l.do(ctx, cmd); err != nil {
		return
	}
	server := cmd.Val()
	received := c.opts.now()
	mid := sent.Add(received.Sub(sent) / 2)
	c.offset.Store(int64(server.Sub(mid).Round(time.Millisecond))) // envelopes keep milliseconds
}

// keepClock syncs the clock every ClockSync until Close.
func (c *Cache[V]) keepClock() {
	t := time.NewTicker(c.opts.ClockSync)
	defer t.Stop()
	for {
		select {
		case <-c.base.Done():
			return
		case <-t.C:
			c.syncClock(c.base)
		}
	}
}
