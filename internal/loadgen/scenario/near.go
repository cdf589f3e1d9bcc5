package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/loadgen"
	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// nearHits is the near cache's hit counter (cachex.NearCacheCollector); an
// API exports it only when its near cache is on.
const nearHits = "cachex_near_hits_total"

// Near runs the stampede scenario's phases twice, on -target (an API
// without the near cache) and then on -near-target (one with it, sharing
// -target's Redis and database), and counts the commands the cache Redis
// (-redis-url) processed during each phase.
type Near struct {
	cfg        *Config
	stampede   *Stampede // its -phase-duration, -force and -max-duplicates
	nearRaw    string
	nearTarget *url.URL
	redisURL   string
	getenv     func(string) string
}

// Name is "near".
func (*Near) Name() string { return "near" }

// Usage is near's paragraph of -h.
func (*Near) Usage() string {
	return `the stampede scenario's -phases on -target (near cache off), then
on -near-target (an API with NEAR_CACHE=true on the same Redis); the
report adds the commands the cache Redis (-redis-url) processed per
second and per request, and the near cache's hits, per phase.`
}

func (n *Near) register(fs *flag.FlagSet) {
	fs.StringVar(&n.nearRaw, "near-target", n.getenv("LOADGEN_NEAR_TARGET"),
		"near: base URL of an API with the near cache on, sharing -target's Redis and database (env LOADGEN_NEAR_TARGET; make run-local starts one)")
	fs.StringVar(&n.redisURL, "redis-url", n.getenv("REDIS_URL"),
		"near: the caches' Redis, whose INFO counts the commands each phase cost (env REDIS_URL; loopback unless -allow-remote)")
}

func (n *Near) check() error {
	if len(n.cfg.Targets) != 1 {
		return fmt.Errorf("near: one -target (the API without the near cache), got %d", len(n.cfg.Targets))
	}
	if n.nearRaw != "" {
		u, err := loadgen.ParseTarget(n.nearRaw, n.cfg.AllowRemote)
		if err != nil {
			return fmt.Errorf("-near-target: %w", err)
		}
		n.nearTarget = u
	}
	if n.redisURL != "" {
		opt, err := redis.ParseURL(n.redisURL)
		if err != nil {
			return fmt.Errorf("-redis-url: %w", err)
		}
		if _, err := loadgen.ParseTarget("http://"+opt.Addr, n.cfg.AllowRemote); err != nil {
			return fmt.Errorf("-redis-url: %w", err)
		}
	}
	return n.stampede.check()
}

// errNearUnset is Run's error when -near-target or -redis-url is not set
// (check lets a command line without them parse, as the docs show it).
var errNearUnset = errors.New("near: set -near-target and -redis-url (make experiments starts the near API and reads REDIS_URL from .run/env)")

// Run measures every phase on each side in turn and writes the report; its
// error is as stampede's, or a side that is not what its flag says.
func (n *Near) Run(ctx context.Context, e *Env) (err error) {
	if n.nearTarget == nil || n.redisURL == "" {
		return errNearUnset
	}
	near, err := loadgen.NewTargets([]*url.URL{n.nearTarget}, requestTimeout, e.cfg.TraceSample)
	if err != nil {
		return err
	}
	defer near.CloseIdleConnections()
	opt, _ := redis.ParseURL(n.redisURL) // checked by check
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	sum := &NearSummary{StampedeSummary: *newStampedeSummary(n.Name(), e, n.stampede)}
	sum.Target = e.targets.String() + " (near cache off), " + near.String() + " (near cache on)"
	sides := []struct {
		name    string
		targets loadgen.Targets
		on      bool
	}{{"off", e.targets, false}, {"on", near, true}}
	var scheduled int64
	for _, side := range sides {
		sub := *e
		sub.targets = side.targets
		sched, err := n.runSide(ctx, &sub, rdb, side.name, side.on, sum)
		scheduled += sched
		if err != nil {
			return err
		}
	}
	sum.finish()
	if scheduled > 0 {
		sum.ErrorRate = float64(sum.Errors+sum.Dropped) / float64(scheduled)
	}
	return e.concludeJudged(ctx, n.Name(), sum, &sum.Verdict, errPhaseBounds)
}

// runSide runs every phase on e's one target, named "<side> <phase>", after
// checking that the target's near cache is on exactly when on says so.
func (n *Near) runSide(ctx context.Context, e *Env, rdb *redis.Client, side string, on bool, sum *NearSummary) (scheduled int64, err error) {
	before, err := e.targets[0].Scrape(ctx)
	if err != nil {
		return 0, err
	}
	if has := hasSeries(before, nearHits); has != on {
		return 0, fmt.Errorf("%s exports %s: %v, want %v: -target is the API without the near cache, -near-target the one with NEAR_CACHE=true",
			e.targets[0], nearHits, has, on)
	}
	restore, err := saveStrategy(ctx, e)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, restore()) }()
	for _, p := range e.cfg.HotKeys.Phases {
		p.Name = side + " " + p.Name
		ps, nr, sched, err := n.runPhase(ctx, e, rdb, p)
		scheduled += sched
		if err != nil {
			return scheduled, fmt.Errorf("phase %s: %w", p.Name, err)
		}
		sum.add(ps, n.stampede.maxDuplicates, e.cfg.MaxErrorRate)
		sum.Redis = append(sum.Redis, nr)
	}
	return scheduled, nil
}

// runPhase is stampede's phase between two readings of the Redis command
// counter; the near hits come from the phase's increase of the target's
// counters.
func (n *Near) runPhase(ctx context.Context, e *Env, rdb *redis.Client, p Phase) (PhaseSummary, NearPhase, int64, error) {
	c0, err := commandsProcessed(ctx, rdb)
	if err != nil {
		return PhaseSummary{}, NearPhase{}, 0, err
	}
	ps, inc, sched, err := n.stampede.runPhase(ctx, e, p)
	if err != nil {
		return ps, NearPhase{}, sched, err
	}
	c1, err := commandsProcessed(ctx, rdb)
	if err != nil {
		return ps, NearPhase{}, sched, err
	}
	nr := NearPhase{Name: p.Name, RedisCommands: float64(c1 - c0), NearHits: inc.Sum(nearHits, nil)}
	if d := ps.End.Sub(ps.Start).Seconds(); d > 0 {
		nr.RedisCommandsPerSecond = nr.RedisCommands / d
	}
	if ps.Requests > 0 {
		nr.RedisCommandsPerRequest = nr.RedisCommands / float64(ps.Requests)
	}
	if ps.Gets > 0 {
		nr.NearHitShare = nr.NearHits / ps.Gets
	}
	return ps, nr, sched, nil
}

// commandsProcessed reads total_commands_processed from the server's INFO
// stats: every command it ran, from every client (two INFO calls a phase
// among them).
func commandsProcessed(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		return 0, fmt.Errorf("redis INFO stats: %w", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("redis INFO stats: no total_commands_processed")
}

// hasSeries reports whether s holds a series named name.
func hasSeries(s scrape.Samples, name string) bool {
	for _, smp := range s {
		if smp.Name == name {
			return true
		}
	}
	return false
}
