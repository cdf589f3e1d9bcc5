// Package scenario holds loadgen's scenarios, one file each, behind the
// Scenario interface: stampede (cache strategies side by side), browse
// (the read mix, optionally through a cache Redis outage), reserve
// (contention and the no-oversell invariant), lostlock (oversold units per
// reservation mode), capacity (the highest sustainable rate per endpoint
// class, from a stepped open-model ramp), near (stampede's phases on an API
// without the near cache and on one with it, with the cache Redis's
// commands) and demo (the endless mix of the compose stack). Config holds the command line the scenarios share;
// ParseArgs parses it and Run runs a scenario, writing summary.json,
// report.md and charts (Replot renders the last two again from the first).
// Every summary lists each phase's slowest sampled requests by trace id
// (Traces), with -jaeger-url also the slowest one's spans, drawn as a
// waterfall.
package scenario
