package testenv

import (
	"context"
	"os"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisNode is one Redis server owned by a test. Unless it came from
// REDIS_URL it is private to the test, keeps nothing on disk, and can be made
// to fail: Stop, Kill, Pause, Resume and Restart.
type RedisNode struct {
	tb   TB
	addr string
	ctl  nodeControl // nil for a shared server from REDIS_URL
	url  string      // set only for a shared server from REDIS_URL
}

// nodeControl runs one Redis server on a fixed address: a local process or a
// container. Every method returns only when the change has taken effect.
type nodeControl interface {
	stop(ctx context.Context) error    // graceful shutdown
	kill(ctx context.Context) error    // SIGKILL: a crash
	pause(ctx context.Context) error   // SIGSTOP: alive but silent
	resume(ctx context.Context) error  //
	restart(ctx context.Context) error // kill, then start again on the same address, empty
	// restartFromSnapshot kills the server and starts it again with what
	// SAVE wrote; only where snapshots reports true.
	restartFromSnapshot(ctx context.Context) error
	// snapshots reports whether SAVE's file survives a restart.
	snapshots() bool
	close() // release everything, whatever the state
}

// Redis returns a Redis server for the test: the one at REDIS_URL when set
// (shared with other tests, so use key names of your own), else a private
// redis-server on a free loopback port, else a container.
func Redis(tb TB) *RedisNode {
	tb.Helper()
	skipShort(tb, "Redis")
	if u := os.Getenv("REDIS_URL"); u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			tb.Fatalf("testenv: REDIS_URL: %v", err)
		}
		n := &RedisNode{tb: tb, addr: opt.Addr, url: u}
		ping(tb, n.Client(), "REDIS_URL="+u)
		return n
	}
	return RedisNodes(tb, 1)[0]
}

// RedisNodes returns n independent private Redis servers (for Redlock), each
// on its own loopback port. It ignores REDIS_URL: a shared server cannot be
// killed or paused.
func RedisNodes(tb TB, n int) []*RedisNode {
	tb.Helper()
	skipShort(tb, "Redis")
	return startNodes(tb, n, false)
}

// startNodes starts n private servers, cluster-enabled or not, preferring a
// local binary over a container.
func startNodes(tb TB, n int, cluster bool) []*RedisNode {
	tb.Helper()
	var tried []string
	if _, err := exec.LookPath("redis-server"); err == nil {
		nodes := make([]*RedisNode, n)
		for i := range nodes {
			nodes[i] = startProcessNode(tb, cluster)
		}
		return nodes
	}
	tried = append(tried, "redis-server on PATH: not found")
	if ok, why := dockerAvailable(); ok {
		nodes := make([]*RedisNode, n)
		for i := range nodes {
			nodes[i] = startContainerNode(tb, cluster)
		}
		return nodes
	} else {
		tried = append(tried, "Docker for testcontainers: "+why)
	}
	missing(tb, "Redis server",
		"Install redis-server (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), "+
			"or start a Docker engine for testcontainers.", tried)
	return nil
}

// Addr is the server's host:port.
func (n *RedisNode) Addr() string { return n.addr }

// URL is a redis:// URL for the server, as REDIS_URL would carry it.
func (n *RedisNode) URL() string {
	if n.url != "" {
		return n.url
	}
	return "redis://" + n.addr
}

// Options returns fresh client options for the server with short timeouts
// suited to tests; change them before use as needed.
func (n *RedisNode) Options() *redis.Options {
	if n.url != "" {
		opt, _ := redis.ParseURL(n.url) // validated in Redis
		return opt
	}
	return &redis.Options{
		Addr:         n.addr,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
	}
}

// Client returns a new client of the server, closed at the end of the test.
func (n *RedisNode) Client() *redis.Client {
	c := redis.NewClient(n.Options())
	n.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop shuts the server down gracefully (SIGTERM); its data is gone.
func (n *RedisNode) Stop() {
	n.do("stop", func(c nodeControl, ctx context.Context) error { return c.stop(ctx) })
}

// Kill ends the server with SIGKILL, as in a crash; its data is gone.
func (n *RedisNode) Kill() {
	n.do("kill", func(c nodeControl, ctx context.Context) error { return c.kill(ctx) })
}

// Pause freezes the server (SIGSTOP): connections stay open but nothing
// answers until Resume, as in a long GC pause or a stalled VM.
func (n *RedisNode) Pause() {
	n.do("pause", func(c nodeControl, ctx context.Context) error { return c.pause(ctx) })
}

// Resume lets a paused server run again; it answers what was sent meanwhile.
func (n *RedisNode) Resume() {
	n.do("resume", func(c nodeControl, ctx context.Context) error { return c.resume(ctx) })
}

// Restart ends the server if it runs (SIGKILL) and starts a new, empty one on
// the same address: a crash and restart without persistence. It returns when
// the new server answers.
func (n *RedisNode) Restart() {
	n.do("restart", func(c nodeControl, ctx context.Context) error { return c.restart(ctx) })
}

// Snapshot saves the server's data to disk (SAVE), as Redis's default RDB
// persistence does every so often. Only a local redis-server process
// supports it.
func (n *RedisNode) Snapshot() {
	n.tb.Helper()
	if n.ctl == nil || !n.ctl.snapshots() {
		n.tb.Fatalf("testenv: Snapshot needs a private redis-server process (install redis-server)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := redis.NewClient(n.Options())
	defer c.Close()
	if err := c.Save(ctx).Err(); err != nil {
		n.tb.Fatalf("testenv: SAVE on Redis %s: %v", n.addr, err)
	}
}

// RestartFromSnapshot ends the server (SIGKILL) and starts it again on the
// same address with the data of its last Snapshot: a crash of a server with
// RDB persistence, which loses every write since that snapshot. It returns
// when the new server answers.
func (n *RedisNode) RestartFromSnapshot() {
	n.tb.Helper()
	if n.ctl == nil || !n.ctl.snapshots() {
		n.tb.Fatalf("testenv: RestartFromSnapshot needs a private redis-server process (install redis-server)")
	}
	n.do("restart from snapshot", func(c nodeControl, ctx context.Context) error { return c.restartFromSnapshot(ctx) })
}

func (n *RedisNode) do(op string, f func(nodeControl, context.Context) error) {
	n.tb.Helper()
	if n.ctl == nil {
		n.tb.Fatalf("testenv: cannot %s the shared Redis at REDIS_URL; use RedisNodes for fault injection", op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f(n.ctl, ctx); err != nil {
		n.tb.Fatalf("testenv: %s Redis %s: %v", op, n.addr, err)
	}
}

// ping fails the test unless the client answers PING within a few seconds.
func ping(tb TB, c redis.UniversalClient, what string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatalf("testenv: Redis at %s does not answer: %v", what, err)
	}
}
