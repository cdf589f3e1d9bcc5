package redistest

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is a private redis-server bound to a test, for tests that read
// better without error checks: it is killed when the test ends, and each
// control fails the test when it fails.
type Node struct {
	s  *Server
	tb TB
}

// Redis starts one private server for the test (see New).
func Redis(tb TB) *Node {
	tb.Helper()
	return &Node{s: New(tb), tb: tb}
}

// RedisNodes starts n independent private servers, for Redlock.
func RedisNodes(tb TB, n int) []*Node {
	tb.Helper()
	nodes := make([]*Node, n)
	for i := range nodes {
		nodes[i] = Redis(tb)
	}
	return nodes
}

// Server is the node's server, for the controls that return errors.
func (n *Node) Server() *Server { return n.s }

// Addr is the server's host:port.
func (n *Node) Addr() string { return n.s.Addr() }

// URL is a redis:// URL of the server.
func (n *Node) URL() string { return "redis://" + n.s.Addr() }

// Options returns fresh client options for the server (see
// Server.Options); change them before use as needed.
func (n *Node) Options() *redis.Options { return n.s.Options() }

// Client returns a new client of the server, closed when the test ends.
func (n *Node) Client() *redis.Client { return Client(n.tb, n.s) }

// Stop shuts the server down (SIGTERM); its data is gone.
func (n *Node) Stop() { n.do((*Server).Stop) }

// Kill ends the server with SIGKILL, as in a crash; its data is gone.
func (n *Node) Kill() { n.do((*Server).Kill) }

// Pause freezes the server (SIGSTOP): connections stay open, nothing
// answers until Resume.
func (n *Node) Pause() { Must(n.tb, n.s.Pause()) }

// Resume lets a paused server run again; it answers what was sent meanwhile.
func (n *Node) Resume() { Must(n.tb, n.s.Resume()) }

// Restart kills the server and starts an empty one on the same port.
func (n *Node) Restart() { n.do((*Server).Restart) }

// Snapshot saves the server's data to disk (SAVE).
func (n *Node) Snapshot() { n.do((*Server).Snapshot) }

// RestartFromSnapshot kills the server and starts it again on the same port
// with the data of its last Snapshot.
func (n *Node) RestartFromSnapshot() { n.do((*Server).RestartFromSnapshot) }

func (n *Node) do(f func(*Server, context.Context) error) {
	n.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	Must(n.tb, f(n.s, ctx))
}

// FreeAddr returns a loopback host:port that nobody listened on a moment
// ago.
func FreeAddr(tb TB) string {
	tb.Helper()
	port, err := FreePort(false)
	Must(tb, err)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
