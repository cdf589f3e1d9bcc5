package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProcess is a redis-server child process bound to a fixed loopback port.
type redisProcess struct {
	bin   string
	dir   string
	port  int
	extra []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	paused bool
}

// startProcessNode starts a private redis-server on a free port, retrying with
// another port when the chosen one was taken in the meantime.
func startProcessNode(tb TB, bin string, cluster bool) *RedisNode {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lastErr error
	for range 5 {
		port, err := freePort(cluster)
		if err != nil {
			tb.Fatalf("testenv: %v", err)
		}
		p := &redisProcess{bin: bin, dir: tb.TempDir(), port: port}
		if cluster {
			p.extra = clusterArgs()
		}
		if lastErr = p.start(ctx); lastErr == nil {
			tb.Cleanup(p.close)
			return &RedisNode{tb: tb, addr: p.addr(), ctl: p}
		}
		p.close()
	}
	tb.Fatalf("testenv: start redis-server: %v", lastErr)
	return nil
}

func (p *redisProcess) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

func (p *redisProcess) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return errors.New("already running")
	}
	args := []string{
		"--port", strconv.Itoa(p.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", p.dir,
		"--logfile", "redis.log",
	}
	cmd := exec.Command(p.bin, append(args, p.extra...)...)
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited, p.paused = cmd, exited, false

	c := redis.NewClient(&redis.Options{Addr: p.addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			p.cmd = nil
			return fmt.Errorf("redis-server on port %d exited at start: %s", p.port, p.logTail())
		case <-ctx.Done():
			p.signalLocked(syscall.SIGKILL)
			<-exited
			p.cmd = nil
			return fmt.Errorf("redis-server on port %d did not answer: %v", p.port, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logTail returns the end of the server's log, for error messages.
func (p *redisProcess) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "redis.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

func (p *redisProcess) signalLocked(sig syscall.Signal) {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// end sends sig (and SIGCONT, so a paused server can act on it) and waits for
// the process to exit, escalating to SIGKILL after grace.
func (p *redisProcess) end(ctx context.Context, sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	p.signalLocked(sig)
	p.signalLocked(syscall.SIGCONT)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.signalLocked(syscall.SIGKILL)
		<-p.exited
	case <-ctx.Done():
		p.signalLocked(syscall.SIGKILL)
		<-p.exited
	}
	p.cmd, p.paused = nil, false
	return nil
}

func (p *redisProcess) stop(ctx context.Context) error {
	return p.end(ctx, syscall.SIGTERM, 10*time.Second)
}

func (p *redisProcess) kill(ctx context.Context) error {
	return p.end(ctx, syscall.SIGKILL, time.Minute)
}

func (p *redisProcess) pause(context.Context) error  { return p.setPaused(true) }
func (p *redisProcess) resume(context.Context) error { return p.setPaused(false) }

func (p *redisProcess) setPaused(paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errors.New("not running")
	}
	sig := syscall.SIGCONT
	if paused {
		sig = syscall.SIGSTOP
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	// Signals are asynchronous: wait until the kernel reports the new state
	// so that the caller's next command really meets a stopped (or running)
	// server.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stopped, err := processStopped(p.cmd.Process.Pid)
		if errors.Is(err, errors.ErrUnsupported) {
			time.Sleep(50 * time.Millisecond) // no /proc: give the signal time to land
			stopped, err = paused, nil
		}
		if err == nil && stopped == paused {
			p.paused = paused
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("process %d did not reach paused=%v", p.cmd.Process.Pid, paused)
}

// forget deletes the snapshot, if any, so that the next start is empty.
func (p *redisProcess) forget() error {
	err := os.Remove(filepath.Join(p.dir, "dump.rdb"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// snapshots: the process keeps its directory, and loads dump.rdb at start.
func (p *redisProcess) snapshots() bool { return true }

func (p *redisProcess) close() {
	_ = p.kill(context.Background())
}

// FreeAddr returns a loopback host:port that nobody listened on a moment
// ago, for a server the test starts itself.
func FreeAddr(tb TB) string {
	tb.Helper()
	port, err := freePort(false)
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// freePort returns a loopback TCP port that was free a moment ago. With
// clusterBus it also checks port+10000, which Redis Cluster uses for its bus.
func freePort(clusterBus bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !clusterBus {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000))); err == nil {
			_ = bus.Close()
			return port, nil
		}
	}
	return 0, errors.New("find a free port: none found")
}

// ChildProcAttr returns the process attributes testenv starts its servers
// with, for other processes a test or a checker starts: on Linux the kernel
// kills the child when its parent dies, so no orphan outlives a crashed run.
func ChildProcAttr() *syscall.SysProcAttr { return childAttr() }
