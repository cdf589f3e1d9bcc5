// Package loadgen is the engine of the load generator: an open-model
// Runner (arrivals on a fixed schedule whatever the server does, latency
// measured from each arrival's scheduled start, so there is no coordinated
// omission), HDR latency histograms, a Client bound to one target that
// classifies every answer, the Targets of a run (round robin, admin changes
// to every replica), the per-second Timeline of client and server figures,
// and loadgen's own Prometheus metrics and progress line. Every request the
// Client sends carries a W3C traceparent with fresh random ids; Slowest
// keeps each phase's slowest sampled requests, and Jaeger reads their
// traces back.
//
// The scenarios that use it are in package scenario; charts and Markdown
// reports in package report; reading the API's /metrics in package scrape.
package loadgen
