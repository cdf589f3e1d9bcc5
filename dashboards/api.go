package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/units"

// codeRatio is the share of HTTP requests whose code matches codeRegex,
// grouped by by; groups without such requests count as 0, not missing.
func codeRatio(by, codeRegex string) string {
	return ratioOrZero(
		sumRate(by, "http_requests_total", `code=~"`+codeRegex+`"`),
		sumRate(by, "http_requests_total"))
}

// api is the API dashboard: RED per route, Postgres, connection pools.
func api() boardSpec {
	const route = "method, route"
	return boardSpec{
		uid:   uidPrefix + "api",
		title: "API",
		description: "The catalog API seen from the server: request rate, errors and latency per route (RED), " +
			"Postgres query latency and the connection pools. Routes are chi patterns such as " +
			"/v1/categories/{id}/stats, never raw paths.",
		tags: []string{"api"},
		rows: []rowSpec{
			{title: "At a glance", panels: []panelSpec{
				{
					kind: kindStat, title: "Request rate", unit: units.RequestsPerSecond,
					thresholds: okAlways(), w: 6, h: 5,
					description: "HTTP requests per second served by the selected API instances, all routes. There is no " +
						"good or bad value: it follows the load generator's offered rate.",
					targets: []target{{expr: sumRate("", "http_requests_total"), legend: "requests/s"}},
				},
				{
					kind: kindStat, title: "5xx ratio", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.001, 0.01), w: 6, h: 5,
					description: "Share of requests answered with a 5xx status, all routes. Good: 0 (green); yellow from " +
						"0.1%, red from 1%. 503 \"busy\" on reservations comes from lock timeouts under heavy contention; " +
						"other 5xx mean a dependency failed.",
					targets: []target{{expr: codeRatio("", "5.."), legend: "5xx"}},
				},
				{
					kind: kindStat, title: "p99 latency", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 6, h: 5,
					description: "99th percentile of server-side request latency, all routes. Good: under 250 ms (green); " +
						"cache misses on the aggregate routes cost tens to hundreds of milliseconds, so stampedes show " +
						"up here first.",
					targets: []target{{expr: quantile(0.99, "", "http_request_duration_seconds"), legend: "p99"}},
				},
				{
					kind: kindStat, title: "Postgres pool in use", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.7, 0.9), w: 6, h: 5, percent01: true,
					description: "Highest share of the Postgres pool in use on any selected instance " +
						"(pgxpool_acquired_conns / pgxpool_max_conns). Good: below 70%; at 100% requests queue for " +
						"a connection (see \"Postgres acquires that waited\").",
					targets: []target{{expr: "max(" + sel("pgxpool_acquired_conns") + " / " + sel("pgxpool_max_conns") + ")", legend: "in use"}},
				},
			}},
			{title: "Requests per route", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Request rate by route", unit: units.RequestsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "Requests per second by method and route pattern (the R of RED). The mix follows the " +
						"load generator's scenario: product reads dominate browse, category stats and top products " +
						"dominate stampede, reservations dominate reserve.",
					targets: []target{{expr: sumRate(route, "http_requests_total"), legend: "{{method}} {{route}}"}},
				},
				{
					kind: kindTimeseries, title: "5xx ratio by route", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.001, 0.01), w: 12, h: 8, showThresholds: true,
					description: "Share of each route's requests answered with a 5xx status (the E of RED). Good: 0 on " +
						"every route. 503 on POST /v1/reservations means the product's lock was busy past the wait " +
						"budget (or the lock's Redis was down); 5xx elsewhere means Postgres or Redis failed. Reads keep " +
						"working when the cache's Redis is down: the cache bypasses itself.",
					targets: []target{{expr: codeRatio(route, "5.."), legend: "{{method}} {{route}}"}},
				},
				{
					kind: kindTimeseries, title: "4xx ratio by route", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.25, 0.5), w: 8, h: 8,
					description: "Share of each route's requests answered with a 4xx status: client errors, mostly " +
						"expected. 404 for unknown ids, 400/422 for invalid input, 409 on reservations when stock is " +
						"insufficient or a write was fenced. Good: steady and explained by the scenario; a jump means " +
						"clients send bad requests (or stock ran out).",
					targets: []target{{expr: codeRatio(route, "4.."), legend: "{{method}} {{route}}"}},
				},
				{
					kind: kindTimeseries, title: "Latency p50 by route", unit: units.Seconds,
					thresholds: lowerIsBetter(0.1, 0.5), w: 8, h: 8,
					description: "Median server-side latency by route (the D of RED). Good: around a millisecond for " +
						"cached reads (one Redis GET); reservations take a lock and a transaction, so a few milliseconds.",
					targets: []target{{expr: quantile(0.5, route, "http_request_duration_seconds"), legend: "{{method}} {{route}}"}},
				},
				{
					kind: kindTimeseries, title: "Latency p99 by route", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 8, h: 8,
					description: "99th percentile server-side latency by route. Good: under 250 ms. Periodic spikes on " +
						"/v1/categories/{id}/stats and /v1/categories/{id}/top at each TTL expiry are stampedes: " +
						"requests waiting for a recompute (compare strategies xfetch and ttl).",
					targets: []target{{expr: quantile(0.99, route, "http_request_duration_seconds"), legend: "{{method}} {{route}}"}},
				},
			}},
			{title: "Database", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Query latency p50 by query", unit: units.Seconds,
					thresholds: lowerIsBetter(0.1, 0.5), w: 12, h: 8,
					description: "Median Postgres query latency by named query. Good: single-row reads in about a " +
						"millisecond; the aggregates behind category stats and top products cost tens to hundreds of " +
						"milliseconds by design (that is what the cache saves).",
					targets: []target{{expr: quantile(0.5, "query", "catalog_db_query_duration_seconds"), legend: "{{query}}"}},
				},
				{
					kind: kindTimeseries, title: "Query latency p99 by query", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 12, h: 8,
					description: "99th percentile Postgres query latency by named query. When many recomputes run at " +
						"once (a stampede), the aggregates slow each other down and this rises with them; with XFetch " +
						"it should stay flat.",
					targets: []target{{expr: quantile(0.99, "query", "catalog_db_query_duration_seconds"), legend: "{{query}}"}},
				},
			}},
			{title: "Connection pools", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Postgres pool utilisation", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.7, 0.9), w: 8, h: 8, percent01: true, showThresholds: true,
					description: "Share of each instance's Postgres pool in use (pgxpool_acquired_conns / " +
						"pgxpool_max_conns). Good: below 70%. Near 100%, requests wait for a connection, which a " +
						"stampede of slow aggregates causes quickly.",
					targets: []target{{expr: sel("pgxpool_acquired_conns") + " / " + sel("pgxpool_max_conns"), legend: "{{instance}}"}},
				},
				{
					kind: kindTimeseries, title: "Postgres pool connections", unit: units.Short,
					thresholds: okAlways(), w: 8, h: 8,
					description: "Postgres connections per instance: acquired (in use), idle, and the pool's maximum. " +
						"Good: acquired well below max.",
					targets: []target{
						{expr: sel("pgxpool_acquired_conns"), legend: "{{instance}} acquired"},
						{expr: sel("pgxpool_idle_conns"), legend: "{{instance}} idle"},
						{expr: sel("pgxpool_max_conns"), legend: "{{instance}} max"},
					},
				},
				{
					kind: kindTimeseries, title: "Postgres acquires that waited", unit: units.OpsPerSecond,
					thresholds: lowerIsBetter(1, 10), w: 8, h: 8,
					description: "Connection acquires per second that found the Postgres pool empty and had to wait for " +
						"a connection to come back. Good: zero or close to it; a steady rate means the pool is too small " +
						"for the load or queries hold connections too long.",
					targets: []target{{expr: sumRate("instance", "pgxpool_empty_acquire_total"), legend: "{{instance}}"}},
				},
				{
					kind: kindTimeseries, title: "Redis pool connections", unit: units.Short,
					thresholds: okAlways(), w: 12, h: 8,
					description: "Connections in each instance's go-redis pool for the cache: total open and idle. Good: " +
						"some idle connections at all times; total pinned at the pool size with no idle ones means " +
						"requests wait for Redis connections.",
					targets: []target{
						{expr: sel("redis_pool_total_conns"), legend: "{{instance}} total"},
						{expr: sel("redis_pool_idle_conns"), legend: "{{instance}} idle"},
					},
				},
				{
					kind: kindTimeseries, title: "Redis pool timeouts", unit: units.OpsPerSecond,
					thresholds: anyIsBad(0.001), w: 12, h: 8,
					description: "Waits for a free connection in the cache's Redis pool that timed out, per second. Good: " +
						"a flat zero. Anything else means the pool is exhausted: too small, Redis slow or unreachable.",
					targets: []target{{expr: sumRate("instance", "redis_pool_timeouts_total"), legend: "{{instance}}"}},
				},
			}},
			{title: "Scrape targets", panels: []panelSpec{
				{
					kind: kindStateTimeline, title: "Targets up", unit: units.Short,
					thresholds: okAlways(), w: 24, h: 6,
					description: "Whether Prometheus's last scrape of each target (the API instances, the load generator) " +
						"succeeded: up (green) or down (red: the process is down, restarting, hung or unreachable, and " +
						"its panels go blank). StampedeTargetDown fires after a minute down.",
					valueNames:  map[string]string{"0": "down", "1": "up"},
					valueColors: map[string]string{"0": "red", "1": "green"},
					targets:     []target{{expr: sel("up"), legend: "{{job}} {{instance}}"}},
				},
			}},
		},
	}
}
