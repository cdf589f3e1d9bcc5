// Package scrape reads the stampede API's /metrics (the Prometheus text
// format, parsed by prometheus/common/expfmt) into flat samples and turns
// successive scrapes of a counter into its increase the way Prometheus's
// rate() does: a value that went down is a counter reset (a restarted
// replica), so the increase since the reset is the new value itself.
//
// Only counters (and the _count, _sum and _bucket series of histograms and
// summaries, which are counters too) may be passed to Increase; gauges go
// up and down and have no increase.
package scrape
