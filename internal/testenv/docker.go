package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// The container fallback, used only when no local server or binary exists
// and a Docker engine answers. Leftover containers of a crashed test binary
// are removed by testcontainers' reaper (Ryuk), the container counterpart of
// the process servers' parent-death signal.

const (
	redisImage    = "redis:7-alpine"
	postgresImage = "postgres:16-alpine"
	// startTimeout bounds starting a container, image pull included.
	startTimeout = 2 * time.Minute
)

// init silences testcontainers' process-wide logger (engine banner, reaper
// chatter) before any test runs; each container logs to its own test.
func init() { tclog.SetDefault(tclog.NewNoopLogger()) }

// containerLogger sends testcontainers' log to the test's, and nowhere when
// the caller is not a test.
func containerLogger(tb TB) tclog.Logger {
	if t, ok := tb.(testing.TB); ok {
		return tclog.TestLogger(t)
	}
	return tclog.NewNoopLogger()
}

// dockerAvailable reports whether a Docker engine answers a ping within three
// seconds, and if not, a short reason. It prints nothing, never panics, and
// without an engine (no socket) returns within milliseconds. testcontainers
// remembers for the whole process where the engine is, or that none was found.
func dockerAvailable() (ok bool, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	defer func() {
		// testcontainers panics when an engine found a moment ago stops
		// answering during discovery (MustExtractDockerSocket).
		if r := recover(); r != nil {
			ok, why = false, fmt.Sprintf("no Docker engine answers: %v", r)
		}
	}()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return false, "no Docker engine answers: " + oneLine(err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return false, "no Docker engine answers: " + oneLine(err)
	}
	return true, ""
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// redisContainer is a redis-server in a container, reachable at a fixed
// loopback address that survives restarts. It keeps nothing on disk except,
// in cluster mode, nodes.conf, as a process server does in its directory.
type redisContainer struct {
	cli  *testcontainers.DockerClient
	ctr  *testcontainers.DockerContainer
	addr string
}

// startContainerNode starts redis:7-alpine on a free fixed port of
// 127.0.0.1 (kept across Restart), retrying with another port when the
// chosen one was taken meanwhile, and returns once it answers PING there;
// the container is removed at the end of the test. A cluster node uses host
// networking, which only a local Linux engine offers
// (docs/architecture.md#tests).
func startContainerNode(tb TB, cluster bool) *RedisNode {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		tb.Fatalf("testenv: Docker client: %v", err)
	}
	if cluster {
		if why := hostNetworkProblem(ctx, cli); why != "" {
			tb.Fatalf("testenv: Redis Cluster in Docker needs host networking, which only a Linux engine "+
				"running on this machine offers (%s); install redis-server instead", why)
		}
	}
	var lastErr error
	for range 3 {
		port, err := redistest.FreePort(cluster)
		if err != nil {
			tb.Fatalf("testenv: %v", err)
		}
		c := &redisContainer{cli: cli, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		if lastErr = c.run(ctx, tb, port, cluster); lastErr == nil {
			tb.Cleanup(c.close)
			return &RedisNode{tb: tb, addr: c.addr, ctl: c}
		}
		c.close()
	}
	if cluster {
		tb.Fatalf("testenv: start Redis container with host networking: %v "+
			"(host networking works only with a Linux engine sharing this machine's network)", lastErr)
	}
	tb.Fatalf("testenv: start Redis container: %v", lastErr)
	return nil
}

// hostNetworkProblem says why host networking would not put a container's
// ports on this machine's loopback, or returns "" if it should.
func hostNetworkProblem(ctx context.Context, cli *testcontainers.DockerClient) string {
	if runtime.GOOS != "linux" {
		return "tests run on " + runtime.GOOS + ", so the engine runs in a VM"
	}
	if !strings.HasPrefix(cli.DaemonHost(), "unix://") {
		return "the engine at " + cli.DaemonHost() + " is not local"
	}
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return err.Error()
	}
	if info.Info.OSType != "linux" {
		return "the engine runs " + info.Info.OSType + " containers"
	}
	if strings.Contains(info.Info.OperatingSystem, "Docker Desktop") {
		return "Docker Desktop runs its engine in a VM"
	}
	return ""
}

// run creates and starts the container and waits until PING answers at
// c.addr. On error c.ctr may still be set, for close to remove.
func (c *redisContainer) run(ctx context.Context, tb TB, port int, cluster bool) error {
	cmd := []string{"redis-server", "--save", "", "--appendonly", "no", "--protected-mode", "no"}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(containerLogger(tb)),
		// Only for the first start: logs accumulate across restarts.
		testcontainers.WithWaitStrategyAndDeadline(time.Minute, wait.ForLog("Ready to accept connections")),
	}
	if cluster {
		cmd = append(cmd, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
		cmd = append(cmd, redistest.ClusterArgs()...)
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}))
	} else {
		opts = append(opts,
			testcontainers.WithExposedPorts("6379/tcp"),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{
					network.MustParsePort("6379/tcp"): {{
						HostIP:   netip.MustParseAddr("127.0.0.1"),
						HostPort: strconv.Itoa(port),
					}},
				}
			}))
	}
	opts = append(opts, testcontainers.WithCmd(cmd...))
	ctr, err := testcontainers.Run(ctx, redisImage, opts...)
	c.ctr = ctr
	if err != nil {
		return err
	}
	return awaitRedis(ctx, c.addr)
}

func (c *redisContainer) id() string { return c.ctr.GetContainerID() }

// running reports whether the container runs (paused counts as running).
func (c *redisContainer) running(ctx context.Context) (bool, error) {
	res, err := c.cli.ContainerInspect(ctx, c.id(), client.ContainerInspectOptions{})
	if err != nil {
		return false, err
	}
	return res.Container.State != nil && res.Container.State.Running, nil
}

// waitRunning polls until the container's running state is want.
func (c *redisContainer) waitRunning(ctx context.Context, want bool) error {
	for {
		got, err := c.running(ctx)
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %.12s: running=%v, want %v: %w", c.id(), got, want, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// start starts the stopped container again: redis-server begins empty, as
// nothing was persisted, on the same address. It returns when PING answers.
func (c *redisContainer) start(ctx context.Context) error {
	if up, err := c.running(ctx); err != nil {
		return err
	} else if up {
		return errors.New("already running")
	}
	if _, err := c.cli.ContainerStart(ctx, c.id(), client.ContainerStartOptions{}); err != nil {
		return err
	}
	return awaitRedis(ctx, c.addr)
}

// stop shuts the server down with SIGTERM, escalating to SIGKILL after 10s.
// The engine thaws a paused container for the signal.
func (c *redisContainer) stop(ctx context.Context) error {
	grace := 10
	if _, err := c.cli.ContainerStop(ctx, c.id(), client.ContainerStopOptions{Timeout: &grace}); err != nil {
		return err
	}
	return c.waitRunning(ctx, false)
}

// kill sends SIGKILL, as in a crash, and returns when the container has
// exited; it does nothing if the container is not running. The engine
// delivers SIGKILL to a paused container and thaws it, so a paused server
// dies without answering what was sent meanwhile.
func (c *redisContainer) kill(ctx context.Context) error {
	if up, err := c.running(ctx); err != nil || !up {
		return err
	}
	if _, err := c.cli.ContainerKill(ctx, c.id(), client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return err
	}
	return c.waitRunning(ctx, false)
}

// pause freezes every process of the container (the cgroup freezer, the
// container equivalent of SIGSTOP); connections stay open, nothing answers.
func (c *redisContainer) pause(ctx context.Context) error {
	_, err := c.cli.ContainerPause(ctx, c.id(), client.ContainerPauseOptions{})
	return err
}

// resume thaws a paused container.
func (c *redisContainer) resume(ctx context.Context) error {
	_, err := c.cli.ContainerUnpause(ctx, c.id(), client.ContainerUnpauseOptions{})
	return err
}

// restart kills the container and starts it again: redis-server begins
// empty, as nothing was persisted, on the same address.
func (c *redisContainer) restart(ctx context.Context) error {
	if err := c.kill(ctx); err != nil {
		return err
	}
	return c.start(ctx)
}

// restartFromSnapshot: a container never saves (Snapshot refuses it).
func (c *redisContainer) restartFromSnapshot(context.Context) error { return errors.ErrUnsupported }

// snapshots: not supported in containers.
func (c *redisContainer) snapshots() bool { return false }

// close removes the container whatever its state, ignoring errors.
func (c *redisContainer) close() {
	terminate(c.ctr)
	_ = c.cli.Close()
}

// terminate removes a container, if any, without a grace period and
// ignoring errors.
func terminate(ctr *testcontainers.DockerContainer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = ctr.Terminate(ctx, testcontainers.StopTimeout(0)) // nil-safe
}

// awaitRedis polls PING at addr until the server answers or ctx ends.
func awaitRedis(ctx context.Context, addr string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rc.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := rc.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer to PING at %s: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startPostgresContainer starts postgres:16-alpine with trust authentication
// for user postgres and fsync off, waits until it accepts connections from
// this machine, removes it at the end of the test, and returns an admin
// connection string to its postgres database.
func startPostgresContainer(tb TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	ctr, err := testcontainers.Run(ctx, postgresImage,
		testcontainers.WithLogger(containerLogger(tb)),
		testcontainers.WithEnv(map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"}),
		testcontainers.WithCmd("postgres", "-c", "fsync=off", "-c", "full_page_writes=off"),
		testcontainers.WithExposedPorts("5432/tcp"),
		testcontainers.WithWaitStrategyAndDeadline(time.Minute,
			// The image's init script runs a temporary server first: the
			// second "ready" is the real one.
			wait.ForLog("database system is ready to accept connections").WithOccurrence(2),
			wait.ForListeningPort("5432/tcp").SkipInternalCheck()),
	)
	tb.Cleanup(func() { terminate(ctr) }) // ctr may be set even on error
	if err != nil {
		tb.Fatalf("testenv: start Postgres container: %v", err)
	}
	host, err := ctr.Host(ctx)
	if err != nil {
		tb.Fatalf("testenv: Postgres container host: %v", err)
	}
	port, err := ctr.MappedPort(ctx, "5432/tcp")
	if err != nil {
		tb.Fatalf("testenv: Postgres container port: %v", err)
	}
	return "postgres://postgres@" + net.JoinHostPort(host, port.Port()) + "/postgres?sslmode=disable"
}
