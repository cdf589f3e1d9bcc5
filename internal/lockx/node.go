package lockx

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// node is one server's client. Over an AutoPipeliner the scripts ride the
// deferred face of the same client (ap), whose batches they share with
// every other caller, and each call waits for its reply only until its
// context ends: an AutoPipeliner runs a queued command on its own context,
// so a deadline would otherwise not bound the wait. A reply abandoned so
// is a lost reply, which
// every script is written to survive.
type node struct {
	rdb redis.UniversalClient
	ap  *redis.AutoPipeliner // nil unless rdb is an AutoPipeliner
}

// newNode returns the node of rdb.
func newNode(rdb redis.UniversalClient) (node, error) {
	given, ok := rdb.(*redis.AutoPipeliner)
	if !ok {
		return node{rdb: rdb}, nil
	}
	ap, err := given.AsyncAutoPipeline()
	if err != nil {
		return node{}, err
	}
	return node{rdb: rdb, ap: ap}, nil
}

// run runs script s by its SHA, and by its source when the server does not
// know the SHA yet (as redis.Script.Run does), and returns its integer
// reply. (A Pipeline is the Scripter that builds the commands without
// sending them.)
func (n node) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (int64, error) {
	if n.ap == nil {
		return s.Run(ctx, n.rdb, keys, args...).Int64()
	}
	build := n.rdb.Pipeline()
	cmd := s.EvalSha(ctx, build, keys, args...)
	err := n.ap.Submit(ctx, cmd).WaitContext(ctx)
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd = s.Eval(ctx, build, keys, args...)
		err = n.ap.Submit(ctx, cmd).WaitContext(ctx)
	}
	if err != nil {
		return 0, err // after ctx's error the reply may be on its way: cmd is not read
	}
	return cmd.Int64()
}
