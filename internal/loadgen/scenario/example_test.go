package scenario_test

import (
	"fmt"
	"io"

	"github.com/stampede-lab/stampede/internal/loadgen/scenario"
)

// ParseArgs reads loadgen's command line without connecting anywhere; Run
// would then drive the scenario.
func ExampleParseArgs() {
	s, cfg, err := scenario.ParseArgs([]string{"-rate", "200", "-phases", "ttl,xfetch", "-admin-token", "t", "stampede"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name(), cfg.Rate, cfg.Targets[0], len(cfg.HotKeys.Phases), cfg.HotKeys.Phases[1].Name)
	// Output: stampede 200 http://127.0.0.1:8080 2 xfetch:1
}
