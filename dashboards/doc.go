// Package dashboards defines stampede's Grafana dashboards in Go, with the
// grafana-foundation-sdk builders, and renders them to the JSON that Grafana
// provisions from dashboards/generated.
//
// There are five dashboards, each with a fixed UID:
//
//   - stampede-overview: the home dashboard, a few key numbers and links to the others;
//   - stampede-cache: the XFetch cache (hit ratio, early refreshes, recomputes, failures);
//   - stampede-locks: the inventory lock and the reservations it protects;
//   - stampede-api: RED metrics per route, Postgres query latency, connection pools;
//   - stampede-loadgen: the load generator's client-side view.
//
// Every dashboard has a Prometheus data source variable named datasource and
// multi-value job and instance variables, and every query filters on
// {job=~"$job", instance=~"$instance"}. Every panel has a description that says
// what it shows and what good looks like, a unit and thresholds. The time
// series queries over the histograms the API records exemplars on
// (http_request_duration_seconds, cachex_recompute_duration_seconds,
// lockx_acquire_wait_seconds) ask for them: Grafana draws each as a point
// that links to its trace in Jaeger.
//
// [All] returns the generated files; `go run ./dashboards/cmd/gendashboards`
// (make dashboards) writes them, and a test fails when the committed JSON is
// out of date. [Queries], [Substitute] and [MetricNames] let tests check every
// query against the metrics the services export (the names are a contract,
// see docs/metrics.md).
package dashboards
