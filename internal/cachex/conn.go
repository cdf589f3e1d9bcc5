package cachex

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// conn sends the cache's commands, each call on one of two lanes: straight
// through the client, or through the deferred face of its AutoPipeliner
// (ap), whose batches it shares with every other caller. An AutoPipeliner
// runs a queued command on its own context, so on that lane a caller waits
// for its reply only as long as its context allows; a reply given up on is
// a lost reply, which every write script survives.
//
// Given an AutoPipeliner, every call takes its lane. With
// Options.AutoPipeline over a plain client, a call takes it only while
// another call of the cache is in flight: a call alone has nothing to batch
// with and would only pay the hand-off to the AutoPipeliner's goroutine.
type conn struct {
	rdb      redis.UniversalClient
	ap       *redis.AutoPipeliner // nil: the plain lane only
	adaptive bool                 // a call alone takes the plain lane
	inFlight atomic.Int64
}

// newConn returns the conn of rdb; autoPipeline is Options.AutoPipeline.
func newConn(rdb redis.UniversalClient, autoPipeline bool) (*conn, error) {
	given, isAP := rdb.(*redis.AutoPipeliner)
	if !isAP && !autoPipeline {
		return &conn{rdb: rdb}, nil
	}
	var ap *redis.AutoPipeliner
	var err error
	if isAP {
		ap, err = given.AsyncAutoPipeline()
	} else {
		ap, err = rdb.AsyncAutoPipeline()
	}
	if err != nil {
		return nil, err
	}
	return &conn{rdb: rdb, ap: ap, adaptive: !isAP}, nil
}

// A lane is the path of one call; leave ends it.
type lane struct {
	c       *conn
	batched bool
	counted bool // enter counted it in inFlight
}

// enter picks the lane of a call. Only Options.AutoPipeline counts the
// calls in flight: the count is one cache line that every call of every
// goroutine writes, which is a cost where nothing reads it.
func (c *conn) enter() lane {
	if !c.adaptive {
		return lane{c: c, batched: c.ap != nil}
	}
	return lane{c: c, batched: c.inFlight.Add(1) > 1, counted: true}
}

func (l lane) leave() {
	if l.counted {
		l.c.inFlight.Add(-1)
	}
}

// do sends cmd and waits for its reply until ctx ends. After an error of
// ctx the reply may still be on its way: the caller must not read cmd.
func (l lane) do(ctx context.Context, cmd redis.Cmder) error {
	if !l.batched {
		return l.c.rdb.Process(ctx, cmd)
	}
	return l.c.ap.Submit(ctx, cmd).WaitContext(ctx)
}

// get returns the string at key; redis.Nil when there is none.
func (l lane) get(ctx context.Context, key string) (string, error) {
	cmd := redis.NewStringCmd(ctx, "get", key)
	if err := l.do(ctx, cmd); err != nil {
		return "", err
	}
	return cmd.Result()
}

// run runs script s by its SHA, and by its source when the server does not
// know the SHA yet, as redis.Script.Run does. (A Pipeline is the Scripter
// that builds the commands without sending them.) The caller reads cmd
// only when err is not one of ctx (see do).
func (l lane) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if !l.batched {
		cmd := s.Run(ctx, l.c.rdb, keys, args...)
		return cmd, cmd.Err()
	}
	build := l.c.rdb.Pipeline()
	cmd := s.EvalSha(ctx, build, keys, args...)
	if err := l.do(ctx, cmd); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd, err
	}
	cmd = s.Eval(ctx, build, keys, args...)
	return cmd, l.do(ctx, cmd)
}

// pipelined sends the commands fn queues in one round trip per node (on the
// batched lane: into the shared batches) and returns the first error among
// them. After an error of ctx some replies may still be on their way: the
// caller must read none of the commands.
func (l lane) pipelined(ctx context.Context, fn func(redis.Pipeliner) error) error {
	if !l.batched {
		_, err := l.c.rdb.Pipelined(ctx, fn)
		return err
	}
	p := l.c.rdb.Pipeline()
	if err := fn(p); err != nil {
		return err
	}
	cmds := p.(interface{ Cmds() []redis.Cmder }).Cmds()
	futures := make([]redis.AutoFuture, len(cmds))
	for i, cmd := range cmds {
		futures[i] = l.c.ap.Submit(ctx, cmd)
	}
	var first error
	for _, f := range futures {
		err := f.WaitContext(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// abandoned reports whether err means the caller stopped waiting, so that
// the command's reply must not be read.
func abandoned(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
