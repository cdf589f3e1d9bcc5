package scenario

import (
	"context"
	"flag"
)

// Scenario is one kind of run of loadgen. Its flags are registered on the
// command line with the shared ones; Run drives the load through the Env.
type Scenario interface {
	// Name is the scenario's name on the command line.
	Name() string
	// Usage is its paragraph of loadgen -h.
	Usage() string
	// Run drives the load and writes the report; its error is the verdict.
	Run(ctx context.Context, e *Env) error

	register(fs *flag.FlagSet) // the flags only this scenario reads
	check() error              // validates them with the shared config, before anything connects
}

// All returns every scenario, each reading cfg; getenv supplies the
// fallbacks of their own flags.
func All(cfg *Config, getenv func(string) string) []Scenario {
	st := &Stampede{cfg: cfg}
	return []Scenario{
		st,
		&Browse{cfg: cfg},
		&Reserve{cfg: cfg},
		&LostLock{cfg: cfg},
		&Capacity{cfg: cfg},
		&Demo{cfg: cfg},
		&Near{cfg: cfg, stampede: st, getenv: getenv},
	}
}
