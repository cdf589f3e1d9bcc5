package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// overview is the home dashboard: the key numbers, each linking to the
// dashboard that explains it.
func overview() boardSpec {
	cacheURL := dashboardURL(uidPrefix + "cache")
	locksURL := dashboardURL(uidPrefix + "locks")
	apiURL := dashboardURL(uidPrefix + "api")
	loadgenURL := dashboardURL(uidPrefix + "loadgen")
	return boardSpec{
		uid:   uidPrefix + "overview",
		title: "Stampede overview",
		description: "Home of the stampede demo: is the cache absorbing the load, is Postgres protected from " +
			"stampedes, are reservations safe, and what do clients see. Each panel links to the dashboard with the " +
			"details; the links at the top list all of them.",
		tags: []string{"overview"},
		rows: []rowSpec{
			{title: "The story", panels: []panelSpec{
				{
					kind: kindText, title: "What the demo does", w: 9, h: 9,
					description: "What the load generator's demo does minute by minute, and the admin calls that " +
						"inject faults so you can watch the dashboards react.",
					content: demoStory,
				},
				{
					kind: kindStateTimeline, title: "Cache strategy over time", unit: units.Short,
					thresholds: okAlways(), w: 9, h: 9,
					link: cacheURL, linkTitle: "Cache (XFetch)",
					description: "The strategy each cache uses, over time (cachex_strategy_info). The demo switches " +
						"category_stats between ttl and xfetch at each stampede burst; the other caches stay on xfetch " +
						"unless you switch them (PUT /admin/caches/{name}).",
					valueNames:  map[string]string{"0": "none", "1": "ttl", "2": "xfetch"},
					valueColors: map[string]string{"0": "blue", "1": "red", "2": "green"},
					targets:     []target{{expr: strategyCode(), legend: "{{cache}}"}},
				},
				{
					kind: kindTable, title: "Alerts now", unit: units.Short,
					thresholds: okAlways(), w: 6, h: 9, needs: needsRedisDown, noValue: "No alert pending or firing",
					description: "Empty while no alert is pending or firing. Prometheus's alerts that are pending or " +
						"firing now (deploy/rules/alerts.yml), by severity. Each alert's runbook_url leads to its section " +
						"of docs/runbooks.md: what it means, which panel to open, what to do. The demo fires StampedeRecomputeStorm at its ttl bursts on " +
						"purpose; the fault calls of the text panel fire the others.",
					targets: []target{{expr: "max by (alertname, alertstate, severity) (" + alertsSeries + ")", legend: "{{alertname}}"}},
				},
			}},
			{title: "Now", panels: []panelSpec{
				{
					kind: kindStat, title: "Cache hit ratio", unit: units.PercentUnit,
					thresholds: higherIsBetter3(hitRatioLow, hitRatioOK), w: 4, h: 5, percent01: true,
					link: cacheURL, linkTitle: "Cache (XFetch)",
					description: hitRatioHelp + " All caches, last minute or two. " + hitRatioDemo,
					targets:     []target{{expr: hitRatio(""), legend: "hit ratio"}},
				},
				{
					kind: kindStat, title: "Recomputes/s", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 3, h: 5,
					link: cacheURL, linkTitle: "Cache (XFetch)",
					description: "Cache recomputes per second, all caches: each one is a Postgres query. Good: low and " +
						"steady, a small fraction of the request rate; spikes at each TTL expiry are stampedes.",
					targets: []target{{expr: sumRate("", "cachex_recomputes_total"), legend: "recomputes/s"}},
				},
				{
					kind: kindStat, title: "Requests/s", unit: units.RequestsPerSecond,
					thresholds: okAlways(), w: 3, h: 5,
					link: apiURL, linkTitle: "API",
					description: "HTTP requests per second served by the API instances. It follows the load generator's " +
						"offered rate: no good or bad value.",
					targets: []target{{expr: sumRate("", "http_requests_total"), legend: "requests/s"}},
				},
				{
					kind: kindStat, title: "5xx ratio", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.001, 0.01), w: 4, h: 5,
					link: apiURL, linkTitle: "API",
					description: "Share of API requests answered with a 5xx status. Good: 0 (green); yellow from 0.1%, red " +
						"from 1%. Lock timeouts under heavy reservation contention answer 503.",
					targets: []target{{expr: codeRatio("", "5.."), legend: "5xx"}},
				},
				{
					kind: kindStat, title: "Lost locks", unit: units.Short,
					thresholds: anyIsBad(0.5), w: 3, h: 5, instant: true, needs: needsLostLock, noValue: "0",
					link: locksURL, linkTitle: "Locks and reservations",
					description: "Empty (shown as 0) unless a lock is lost, e.g. with the holder-pause fault injection. " +
						"Locks lost while held in the dashboard's time range. " + lostLockHelp + " Good: 0.",
					targets: []target{{expr: onlyPositive(increaseOverRange("lockx_lost_total")), legend: "lost"}},
				},
				{
					kind: kindStat, title: "Fenced reservations", unit: units.Short,
					thresholds: anyIsBad(0.5), w: 3, h: 5, instant: true, needs: needsLostLock, noValue: "0",
					link: locksURL, linkTitle: "Locks and reservations",
					description: "Empty (shown as 0) unless a lock is lost, e.g. with the holder-pause fault injection. " +
						fencedHelp + " Counted over the dashboard's time range. Good: 0.",
					targets: []target{{expr: onlyPositive(increaseOverRange("catalog_reservations_total", `result="fenced"`)), legend: "fenced"}},
				},
				{
					kind: kindStat, title: "Client p99", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 4, h: 5,
					link: loadgenURL, linkTitle: "Load generator",
					description: "99th percentile latency measured by the load generator, all scenarios, from each " +
						"request's scheduled start. Good: under 250 ms (green); red from 1 s.",
					targets: []target{{expr: quantile(0.99, "", "loadgen_request_duration_seconds", sent), legend: "p99"}},
				},
			}},
			{title: "Trends", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Hit ratio by cache", unit: units.PercentUnit,
					thresholds: higherIsBetter3(hitRatioLow, hitRatioOK), w: 12, h: 8, percent01: true, showThresholds: true,
					link: cacheURL, linkTitle: "Cache (XFetch)",
					noValue:     "no reads a cache could serve",
					description: hitRatioHelp + " " + hitRatioByCacheDemo,
					targets:     []target{{expr: hitRatioByCache(), legend: "{{cache}}"}},
				},
				recomputesPerKey(cacheURL, "Cache (XFetch)"),
				{
					kind: kindTimeseries, title: "Requests and 5xx", unit: units.RequestsPerSecond,
					thresholds: okAlways(), w: 12, h: 8, rightAxis: []string{"B"},
					link: apiURL, linkTitle: "API",
					description: "API requests per second (left axis) and 5xx responses per second (right axis, 0 when " +
						"there are none). Good: the 5xx line flat at zero.",
					targets: []target{
						{expr: sumRate("", "http_requests_total"), legend: "requests"},
						{expr: sumRate("", "http_requests_total", `code=~"5.."`) + " or " + sumRate("", "http_requests_total") + " * 0", legend: "5xx (right axis)"},
					},
				},
				{
					kind: kindTimeseries, title: "Database queries by query", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					link: apiURL, linkTitle: "API",
					description: "Postgres queries per second by query name: what the caches protect. Under a ttl " +
						"stampede category_stats jumps at each expiry; under xfetch it stays a trickle of early refreshes.",
					targets: []target{{expr: sumRate("query", "catalog_db_query_duration_seconds_count"), legend: "{{query}}"}},
				},
				{
					kind: kindTimeseries, title: "Stampede burst p99 by strategy", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 12, h: 8, showThresholds: true,
					link: loadgenURL, linkTitle: "Load generator",
					description: "99th percentile client latency of the demo's stampede bursts on the hot categories, " +
						"labelled with the category_stats strategy in force. Under ttl readers wait for the recompute at " +
						"each expiry (hundreds of ms); under xfetch they do not (a few ms).",
					targets: []target{{expr: quantile(0.99, "", "loadgen_request_duration_seconds", sent, `scenario="stampede"`) +
						" * on () group_left (strategy) topk(1, max by (strategy) (" + sel("cachex_strategy_info", `cache="category_stats"`) + ") == 1)",
						legend: "{{strategy}}"}},
				},
				{
					kind: kindTimeseries, title: "Client p99 by scenario", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 12, h: 8, showThresholds: true,
					link: loadgenURL, linkTitle: "Load generator",
					description: "99th percentile latency per load generator scenario, measured by the client from each " +
						"request's scheduled start. Good: under 250 ms (dashed yellow line).",
					targets: []target{{expr: quantile(0.99, "scenario", "loadgen_request_duration_seconds", sent), legend: "{{scenario}}"}},
				},
			}},
		},
	}
}

// strategyCode is each cache's strategy as a number (none 0, ttl 1, xfetch 2)
// for the state timeline.
func strategyCode() string {
	code := func(strategy string, n int) string {
		return fmt.Sprintf("max by (cache) (%s) * %d", sel("cachex_strategy_info", `strategy="`+strategy+`"`), n)
	}
	return code("ttl", 1) + " + " + code("xfetch", 2) + " + " + code("none", 0)
}

// demoStory is the overview's text panel.
const demoStory = `**What runs.** The load generator's demo: product reads, batch reads and searches (~50/s), category
top lists and statistics (4/s), reservations and cancellations (5/s), and **every 3 minutes a 40 s stampede burst**
of 200 requests/s on categories 1–3, switching *category_stats* to the next strategy: **ttl, then xfetch**.

**Minute by minute.** 0:00–2:20 steady load: hit ratio about 75%, one recompute per key per TTL window. 2:20 the
first burst, under ttl: every reader that finds a hot key expired recomputes it, so *Recomputes of the hottest key
per TTL window* jumps well above 1 (` + recomputeStormText + `), category_stats queries from 2/s to ~10/s, the burst p99 to seconds, and StampedeRecomputeStorm fires
(*Alerts now*). 5:20 the next burst, under xfetch: one early refresh per key per TTL, p99 tens of ms, no alert of its own. Then
it alternates. Marks on the time axis: purple strategy switches, orange bursts, yellow fault-knob changes, blue
demo pauses, red alerts.

**Try it** (admin token *demo-admin*):
- cache Redis down: ` + "`curl -X PATCH -H 'Authorization: Bearer demo-admin' -H 'Content-Type: application/json' -d '{\"cache_redis_down_percent\": 100}' 127.0.0.1:8080/admin/faults`" + `
- lost locks: ` + "`-d '{\"reservation_pause_ms\": 6000, \"reservation_pause_percent\": 10}'`" + ` to the same URL (PATCH: the knobs combine)
- a slow database (the latency budget burns): ` + "`-d '{\"db_latency_ms\": 1500, \"db_latency_percent\": 100}'`" + ` to the same URL
- a strategy: ` + "`curl -X PUT` … `-d '{\"strategy\": \"ttl\"}' 127.0.0.1:8080/admin/caches/product`" + `
- everything back as it started (knobs off, strategies, mode): ` + "`curl -X POST -H 'Authorization: Bearer demo-admin' 127.0.0.1:8080/admin/reset`" + `
- pause the demo for your own experiment: ` + "`curl -X POST 127.0.0.1:9102/demo/pause`" + ` (and ` + "`/demo/resume`" + `)
`
