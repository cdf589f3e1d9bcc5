package cachex

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// conn sends the cache's commands. Over a plain client (or cluster, or
// ring) they go through it. Over an AutoPipeliner they ride the deferred
// face of the same client (ap), whose batches they share with every other
// caller, and each caller waits for its reply only as long as its context
// allows: an AutoPipeliner runs a queued command on its own context, so a
// per-call deadline would otherwise not bound the wait
// (docs/cachex.md#clients).
type conn struct {
	rdb redis.UniversalClient
	ap  *redis.AutoPipeliner // nil unless rdb is an AutoPipeliner
}

// newConn returns the conn of rdb.
func newConn(rdb redis.UniversalClient) (conn, error) {
	given, ok := rdb.(*redis.AutoPipeliner)
	if !ok {
		return conn{rdb: rdb}, nil
	}
	ap, err := given.AsyncAutoPipeline()
	if err != nil {
		return conn{}, err
	}
	return conn{rdb: rdb, ap: ap}, nil
}

// do sends cmd and waits for its reply until ctx ends. After an error of
// ctx the reply may still be on its way: the caller must not read cmd.
func (c conn) do(ctx context.Context, cmd redis.Cmder) error {
	if c.ap == nil {
		return c.rdb.Process(ctx, cmd)
	}
	return c.ap.Submit(ctx, cmd).WaitContext(ctx)
}

// get returns the string at key; redis.Nil when there is none.
func (c conn) get(ctx context.Context, key string) (string, error) {
	cmd := redis.NewStringCmd(ctx, "get", key)
	if err := c.do(ctx, cmd); err != nil {
		return "", err
	}
	return cmd.Result()
}

// run runs script s by its SHA, and by its source when the server does not
// know the SHA yet, as redis.Script.Run does. (A Pipeline is the Scripter
// that builds the commands without sending them.)
// The caller reads cmd only when err is not one of ctx (see do).
func (c conn) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if c.ap == nil {
		cmd := s.Run(ctx, c.rdb, keys, args...)
		return cmd, cmd.Err()
	}
	build := c.rdb.Pipeline()
	cmd := s.EvalSha(ctx, build, keys, args...)
	if err := c.do(ctx, cmd); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd, err
	}
	cmd = s.Eval(ctx, build, keys, args...)
	return cmd, c.do(ctx, cmd)
}

// pipelined sends the commands fn queues in one round trip per node (over
// an AutoPipeliner: into the shared batches) and returns the first error
// among them. After an error of ctx some replies may still be on their way:
// the caller must read none of the commands.
func (c conn) pipelined(ctx context.Context, fn func(redis.Pipeliner) error) error {
	if c.ap == nil {
		_, err := c.rdb.Pipelined(ctx, fn)
		return err
	}
	p := c.rdb.Pipeline()
	if err := fn(p); err != nil {
		return err
	}
	cmds := p.(interface{ Cmds() []redis.Cmder }).Cmds()
	futures := make([]redis.AutoFuture, len(cmds))
	for i, cmd := range cmds {
		futures[i] = c.ap.Submit(ctx, cmd)
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
