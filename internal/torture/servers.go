package torture

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// servers are a run's Redis servers, a proxy in front of each (px.list[i]
// for nodes[i]) and its fresh database.
type servers struct {
	nodes []*testenv.RedisNode
	db    *pgxpool.Pool
	px    *proxies
}

// startServers starts the Redis servers startRedis returns and a fresh
// database with schema applied, and puts a proxy in front of each server.
// env.Close stops the servers, close the proxies. Errors wrap ErrSetup.
func startServers(ctx context.Context, env *Env, startRedis func() []*testenv.RedisNode, schema string) (*servers, error) {
	s := &servers{px: newProxies()}
	if err := env.Setup(func() { s.nodes = startRedis(); s.db = testenv.Postgres(env) }); err != nil {
		s.px.close()
		return nil, err
	}
	if _, err := s.db.Exec(ctx, schema); err != nil {
		s.px.close()
		return nil, fmt.Errorf("%w: schema: %v", ErrSetup, err)
	}
	for i, n := range s.nodes {
		if _, err := s.px.add("redis"+strconv.Itoa(i), n.Addr()); err != nil {
			s.px.close()
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
	}
	return s, nil
}

func (s *servers) close() { s.px.close() }

// injector returns the fault injector for these servers.
func (s *servers) injector(env *Env) *injector {
	return &injector{env: env, nodes: s.nodes, px: s.px}
}

// scheduleOr returns faults if not nil, else the schedule drawn from seed
// (NewSchedule).
func scheduleOr(faults []Fault, seed uint64, d time.Duration, nodes int, kinds []Kind) []Fault {
	if faults != nil {
		return faults
	}
	return NewSchedule(seed, d, nodes, kinds)
}
