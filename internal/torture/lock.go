package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/lockx/pgfence"
	"github.com/stampede-lab/stampede/internal/testenv"
)

// LockConfig is a run of the lock workload.
type LockConfig struct {
	Seed     uint64
	Duration time.Duration
	// Nodes is the number of Redis servers: 1, or a Redlock quorum (3, 5).
	Nodes int
	// Processes simulate separate services: each has its own Locker and
	// clients. Workers run in each. Resources are the registers contended.
	Processes, Workers, Resources int
	// TTL of the locks, which have no watchdog: a critical section that
	// outlives it has lost its lock.
	TTL time.Duration
	// Unsafe turns the register's token check off: the checker must then
	// find overlapping writes under client pauses.
	Unsafe bool
	// Faults, when not nil, replaces the schedule drawn from Seed.
	Faults []Fault
}

func (c *LockConfig) defaults() {
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	if c.Processes == 0 {
		c.Processes = 3
	}
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.Resources == 0 {
		c.Resources = 3
	}
	if c.TTL == 0 {
		c.TTL = time.Second
	}
}

// acquisition is one Acquire and what followed, as a worker recorded it.
type acquisition struct {
	holder   string
	resource int
	start    time.Time // before Acquire was called
	acquired time.Time // zero when Acquire failed
	token    int64
	err      error
	lostAt   time.Time // when the lock's context ended with ErrLost
	write    string    // "ok", "stale", "error" or "" (none)
}

// RunLock runs the lock workload against fresh servers and returns what it
// did and the anomalies its checks found. The error wraps ErrSetup when the
// servers could not be started.
func RunLock(ctx context.Context, cfg LockConfig) (*Result, error) {
	cfg.defaults()
	env := &Env{}
	defer env.Close()
	srv, err := startServers(ctx, env, func() []*testenv.RedisNode { return testenv.RedisNodes(env, cfg.Nodes) }, `
		CREATE TABLE torture_register (resource integer PRIMARY KEY, value bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0);
		CREATE TABLE torture_writes (id bigserial PRIMARY KEY, resource integer NOT NULL, holder text NOT NULL,
			token bigint NOT NULL, prev bigint NOT NULL, next bigint NOT NULL);
		INSERT INTO torture_register (resource) SELECT generate_series(0, `+strconv.Itoa(cfg.Resources-1)+`);`)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	db, px, in := srv.db, srv.px, srv.injector(env)

	var lockers []*lockx.Locker
	for p := range cfg.Processes {
		var clients []redis.UniversalClient
		for _, x := range px.list {
			c := redis.NewClient(&redis.Options{Addr: x.Listen, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
				DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
			defer c.Close()
			clients = append(clients, c)
		}
		l, err := lockx.New(clients, lockx.Options{Name: "torture" + strconv.Itoa(p), Prefix: "torture:", TTL: cfg.TTL, Wait: 2 * cfg.TTL, NoWatchdog: true})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		defer l.Close()
		lockers = append(lockers, l)
	}

	faults := scheduleOr(cfg.Faults, cfg.Seed, cfg.Duration, cfg.Nodes, nil)
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	start := time.Now()
	var (
		mu   sync.Mutex
		acqs []*acquisition
		wg   sync.WaitGroup
		lag  lagMonitor
	)
	wg.Go(func() { lag.run(runCtx) })
	for p, l := range lockers {
		for w := range cfg.Workers {
			r := rand.New(rand.NewPCG(cfg.Seed, uint64(p*1000+w)))
			wg.Go(func() {
				for seq := 0; runCtx.Err() == nil; seq++ {
					a := &acquisition{holder: fmt.Sprintf("p%d.w%d.%d", p, w, seq), resource: r.IntN(cfg.Resources)}
					lockStep(runCtx, cfg, db, l, in, a)
					mu.Lock()
					acqs = append(acqs, a)
					mu.Unlock()
				}
			})
		}
	}
	recs := in.run(runCtx, start, faults)
	wg.Wait()

	res := &Result{Workload: "lock", Seed: cfg.Seed, Duration: time.Since(start), Faults: recs,
		Ops: map[string]int{}, Checks: []string{"no overlapping accepted writes", "tokens increase", "loss signalled in time", "progress while healthy"}}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acqs {
		switch {
		case a.err != nil:
			res.Ops["acquire_failed"]++
		default:
			res.Ops["acquired"]++
			if !a.lostAt.IsZero() {
				res.Ops["lost"]++
			}
		}
		if a.write != "" {
			res.Ops["write_"+a.write]++
		}
	}
	writes, err := readWrites(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("%w: read history: %v", ErrSetup, err)
	}
	res.Ops["writes_accepted"] = len(writes)
	res.Ops["scheduling_lag_max_ms"] = int(lag.worst().Milliseconds())
	res.Anomalies = append(res.Anomalies, checkRegister(writes)...)
	res.Anomalies = append(res.Anomalies, checkLossTiming(acqs, cfg.TTL, &lag)...)
	res.Anomalies = capAnomalies(append(res.Anomalies, checkProgress(acqs, recs, start, start.Add(cfg.Duration), &lag)...))
	return res, nil
}

// lockStep is one acquisition and, if it succeeds, one fenced
// read-modify-write of the resource's register.
func lockStep(ctx context.Context, cfg LockConfig, db *pgxpool.Pool, l *lockx.Locker, in *injector, a *acquisition) {
	a.start = time.Now()
	actx, cancel := context.WithTimeout(ctx, 3*cfg.TTL)
	defer cancel()
	lk, err := l.Acquire(actx, strconv.Itoa(a.resource))
	if err != nil {
		a.err = err
		return
	}
	a.acquired, a.token = time.Now(), lk.Token()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		<-lk.Context().Done()
		if errors.Is(context.Cause(lk.Context()), lockx.ErrLost) {
			a.lostAt = time.Now()
		}
	}()
	// A paused holder stops after its checks, as a GC pause would: its
	// write goes out on a context the lock's loss does not end.
	wctx, paused := lk.Context(), in.clientPause.Load() > 0
	if paused {
		var c context.CancelFunc
		wctx, c = context.WithTimeout(context.Background(), 5*cfg.TTL)
		defer c()
	}
	// The register is an outside store: read it, then write the new value,
	// each in its own transaction, the token checked by each (not Unsafe).
	claim := func(tx pgx.Tx) error {
		if cfg.Unsafe {
			return nil
		}
		return pgfence.Claim(wctx, tx, pgfence.Row{Table: "torture_register", KeyColumn: "resource", TokenColumn: "fence_token", Key: a.resource}, a.token)
	}
	var prev int64
	a.write = "ok"
	err = pgx.BeginFunc(wctx, db, func(tx pgx.Tx) error {
		if err := claim(tx); err != nil {
			return err
		}
		return tx.QueryRow(wctx, "SELECT value FROM torture_register WHERE resource = $1", a.resource).Scan(&prev)
	})
	if err == nil && paused {
		time.Sleep(cfg.TTL * 3 / 2)
	}
	if err == nil {
		err = pgx.BeginFunc(wctx, db, func(tx pgx.Tx) error {
			if err := claim(tx); err != nil {
				return err
			}
			if _, err := tx.Exec(wctx, "UPDATE torture_register SET value = $2 WHERE resource = $1", a.resource, prev+1); err != nil {
				return err
			}
			_, err := tx.Exec(wctx, "INSERT INTO torture_writes (resource, holder, token, prev, next) VALUES ($1, $2, $3, $4, $5)",
				a.resource, a.holder, a.token, prev, prev+1)
			return err
		})
	}
	switch {
	case errors.Is(err, pgfence.ErrStaleToken):
		a.write = "stale"
	case err != nil:
		a.write = "error"
	}
	_ = lk.Release()
	cancel()
	<-watched
}

// write is one accepted register write, in commit order.
type write struct {
	id         int64
	resource   int
	holder     string
	token      int64
	prev, next int64
}

func readWrites(ctx context.Context, db *pgxpool.Pool) ([]write, error) {
	rows, err := db.Query(ctx, "SELECT id, resource, holder, token, prev, next FROM torture_writes ORDER BY id")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (write, error) {
		var w write
		err := r.Scan(&w.id, &w.resource, &w.holder, &w.token, &w.prev, &w.next)
		return w, err
	})
}
