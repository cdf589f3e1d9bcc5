package testenv

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// processNode is a private redis-server process (redistest.Server) as a
// nodeControl.
type processNode struct{ s *redistest.Server }

// startProcessNode starts a private redis-server on a free port.
func startProcessNode(tb TB, cluster bool) *RedisNode {
	tb.Helper()
	var extra []string
	if cluster {
		extra = redistest.ClusterArgs()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := redistest.Start(ctx, tb.TempDir(), extra...)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	p := processNode{s}
	tb.Cleanup(p.close)
	return &RedisNode{tb: tb, addr: s.Addr(), ctl: p}
}

func (p processNode) stop(ctx context.Context) error    { return p.s.Stop(ctx) }
func (p processNode) kill(ctx context.Context) error    { return p.s.Kill(ctx) }
func (p processNode) pause(context.Context) error       { return p.s.Pause() }
func (p processNode) resume(context.Context) error      { return p.s.Resume() }
func (p processNode) restart(ctx context.Context) error { return p.s.Restart(ctx) }
func (p processNode) restartFromSnapshot(ctx context.Context) error {
	return p.s.RestartFromSnapshot(ctx)
}
func (p processNode) snapshots() bool { return true }
func (p processNode) close()          { p.s.Close() }

// FreeAddr returns a loopback host:port that nobody listened on a moment
// ago, for a server the test starts itself.
func FreeAddr(tb TB) string {
	tb.Helper()
	port, err := redistest.FreePort(false)
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// ChildProcAttr returns the process attributes testenv starts its servers
// with, for other processes a test or a checker starts: on Linux the kernel
// kills the child when its parent dies, so no orphan outlives a crashed run.
func ChildProcAttr() *syscall.SysProcAttr { return redistest.ProcAttr() }
