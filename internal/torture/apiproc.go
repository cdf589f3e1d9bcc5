package torture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// buildAPI builds cmd/api into dir and returns the binary's path.
func buildAPI(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "api")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/stampede-lab/stampede/cmd/api").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: go build cmd/api: %v: %s", ErrSetup, err, out)
	}
	return bin, nil
}

// apiProcess is one API server process of a run: it can be paused
// (SIGSTOP), killed (SIGKILL) and started again on the same address.
type apiProcess struct {
	bin, addr, logPath string
	env                []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// URL is the process's base URL.
func (p *apiProcess) URL() string { return "http://" + p.addr }

// start starts the process and waits until it answers /readyz.
func (p *apiProcess) start(ctx context.Context) error {
	if err := p.launch(); err != nil {
		return err
	}
	return p.awaitReady(ctx)
}

// launch starts the process without waiting for it.
func (p *apiProcess) launch() error {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin)
	cmd.Env = append(os.Environ(), append(p.env, "HTTP_ADDR="+p.addr)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = testenv.ChildProcAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start api: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return nil
}

// awaitReady polls /readyz until it answers 200, the process exits, or two
// minutes pass (a database fault can hold its readiness check).
func (p *apiProcess) awaitReady(ctx context.Context) error {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	for {
		if resp, err := hc.Get(p.URL() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("api on %s exited before it was ready (log %s)", p.addr, p.logPath)
		case <-ctx.Done():
			return fmt.Errorf("api on %s not ready: %w (log %s)", p.addr, ctx.Err(), p.logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// signal sends sig to the process if it runs.
func (p *apiProcess) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return errors.New("api not running")
	}
	return p.cmd.Process.Signal(sig)
}

func (p *apiProcess) pause() error  { return p.signal(syscall.SIGSTOP) }
func (p *apiProcess) resume() error { return p.signal(syscall.SIGCONT) }

// kill ends the process with SIGKILL and waits for it.
func (p *apiProcess) kill() error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process is killed all the same; this keeps waiting simple
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-exited
	return nil
}

// restart starts the process again unless it runs, without waiting for it
// to be ready: the faults go on meanwhile.
func (p *apiProcess) restart() error {
	p.mu.Lock()
	running := p.cmd != nil
	p.mu.Unlock()
	if running {
		return nil
	}
	return p.launch()
}
