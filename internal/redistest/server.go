package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process on a loopback port of its own. It keeps
// nothing on disk but what Snapshot saves, and it can be made to fail: Stop,
// Kill, Pause, Resume, Restart, RestartFromSnapshot. Each returns when the
// change has taken effect. Safe for concurrent use.
type Server struct {
	bin, dir string
	port     int
	extra    []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has been waited for
}

// Start starts redis-server (found on PATH) on a free loopback port with
// dir as its working directory and extra as more arguments (e.g.
// "--cluster-enabled", "yes"), and returns when it answers PING. Close ends
// it.
func Start(ctx context.Context, dir string, extra ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: redis-server is not on PATH (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
	}
	var lastErr error
	for range 5 { // another process may take the free port before the server binds it
		port, err := FreePort(slices.Contains(extra, "--cluster-enabled"))
		if err != nil {
			return nil, err
		}
		s := &Server{bin: bin, dir: dir, port: port, extra: extra}
		if lastErr = s.start(ctx); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("redistest: start redis-server: %w", lastErr)
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Options returns fresh client options for the server, with the timeouts
// of a test and ContextTimeoutEnabled, as cachex.New and lockx.New require
// (a call then ends at its context's deadline); change them as needed
// before use.
func (s *Server) Options() *redis.Options {
	return &redis.Options{
		Addr:                  s.Addr(),
		ContextTimeoutEnabled: true,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
	}
}

func (s *Server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--protected-mode", "no",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", s.dir, "--logfile", "redis.log"}, s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = ProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	c := redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
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
			s.cmd = nil
			return fmt.Errorf("redis-server on port %d exited at start: %s", s.port, s.logTail())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			s.cmd = nil
			return fmt.Errorf("redis-server on port %d did not answer: %v", s.port, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " | ")
}

// end sends sig (and SIGCONT, so a paused server can act on it) and waits
// for the process to exit, escalating to SIGKILL after grace or when ctx
// ends.
func (s *Server) end(ctx context.Context, sig syscall.Signal, grace time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-s.exited:
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		<-s.exited
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	return nil
}

// Stop shuts the server down gracefully (SIGTERM); its data is gone.
func (s *Server) Stop(ctx context.Context) error { return s.end(ctx, syscall.SIGTERM, 10*time.Second) }

// Kill ends the server with SIGKILL, as a crash does; its data is gone.
func (s *Server) Kill(ctx context.Context) error { return s.end(ctx, syscall.SIGKILL, time.Minute) }

// Pause freezes the server (SIGSTOP): connections stay open and nothing
// answers until Resume, as in a long GC pause or a stalled VM.
func (s *Server) Pause() error { return s.setPaused(true) }

// Resume lets a paused server run again; it answers what was sent meanwhile.
func (s *Server) Resume() error { return s.setPaused(false) }

func (s *Server) setPaused(paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redistest: the server is not running")
	}
	sig := syscall.SIGCONT
	if paused {
		sig = syscall.SIGSTOP
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return err
	}
	// Signals are asynchronous: wait until the kernel reports the new state,
	// so that the caller's next command meets a stopped (or running) server.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		stopped, err := processStopped(s.cmd.Process.Pid)
		if errors.Is(err, errors.ErrUnsupported) {
			time.Sleep(50 * time.Millisecond) // no /proc: give the signal time to land
			return nil
		}
		if err == nil && stopped == paused {
			return nil
		}
	}
	return fmt.Errorf("redistest: process %d did not reach paused=%v", s.cmd.Process.Pid, paused)
}

// Restart ends the server if it runs (SIGKILL) and starts a new, empty one
// on the same port: a crash and restart without persistence.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Kill(ctx); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, "dump.rdb")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return s.start(ctx)
}

// Snapshot saves the server's data to disk (SAVE), as Redis's default RDB
// persistence does every so often.
func (s *Server) Snapshot(ctx context.Context) error {
	c := redis.NewClient(s.Options())
	defer c.Close()
	return c.Save(ctx).Err()
}

// RestartFromSnapshot ends the server (SIGKILL) and starts it again on the
// same port with the data of its last Snapshot: the crash of a server with
// RDB persistence, which loses every write since that snapshot.
func (s *Server) RestartFromSnapshot(ctx context.Context) error {
	if err := s.Kill(ctx); err != nil {
		return err
	}
	return s.start(ctx)
}

// Close kills the server, whatever its state.
func (s *Server) Close() { _ = s.Kill(context.Background()) }

// FreePort returns a loopback TCP port that was free a moment ago. With
// clusterBus it also checks port+10000, which Redis Cluster uses for its
// bus.
func FreePort(clusterBus bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
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
	return 0, errors.New("redistest: find a free port: none found")
}
