package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/units"

// loadgenErrors selects the loadgen outcomes that are errors: 5xx, client
// timeouts, transport errors and dropped arrivals (not 4xx: 404 and 409 are
// expected answers in the scenarios; not "canceled": the run ending).
const loadgenErrors = `code=~"5..|timeout|error|dropped"`

// sent selects the requests loadgen actually sent (dropped arrivals are not).
const sent = `code!="dropped"`

const loadgenLatencyHelp = "Latency is measured by the client from each request's scheduled start, so time spent " +
	"queued behind slow requests counts (no coordinated omission); dropped arrivals are not in it."

// loadgen is the load generator's dashboard: the client's view.
func loadgen() boardSpec {
	const ep = "scenario, endpoint"
	all := sumRate("scenario", "loadgen_requests_total")
	return boardSpec{
		uid:   uidPrefix + "loadgen",
		title: "Load generator",
		description: "What the clients see: the rate loadgen offers per scenario and endpoint, the latency it " +
			"measures and the errors it gets. Compare with the API dashboard for the server's view.",
		tags: []string{"loadgen"},
		rows: []rowSpec{
			{title: "Throughput", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Request rate by scenario and endpoint", unit: units.RequestsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "Requests per second loadgen sent, by scenario and endpoint. loadgen runs an open " +
						"model: it keeps to the scenario's schedule whatever the API's latency, so a drop here means " +
						"arrivals were dropped (see below) or the run ended.",
					targets: []target{{expr: sumRate(ep, "loadgen_requests_total", sent), legend: "{{scenario}} {{endpoint}}"}},
				},
				{
					kind: kindTimeseries, title: "Outcomes by code", unit: units.RequestsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "Requests per second by outcome: an HTTP status code, or timeout, canceled (in flight " +
						"when the run ended), error (transport failure) and dropped. Good: 2xx, with the 404s and 409s " +
						"the scenarios expect (unknown ids, insufficient stock).",
					targets: []target{{expr: sumRate("code", "loadgen_requests_total"), legend: "{{code}}"}},
				},
			}},
			{title: "Latency", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Latency p50 / p99 / p99.9", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 8, h: 8, showThresholds: true,
					description: "Client latency percentiles over all scenarios and endpoints. " + loadgenLatencyHelp +
						" Good: p99 under 250 ms (dashed yellow line); a p99.9 far above p99 is the stampede tail.",
					targets: []target{
						{expr: quantile(0.5, "", "loadgen_request_duration_seconds", sent), legend: "p50"},
						{expr: quantile(0.99, "", "loadgen_request_duration_seconds", sent), legend: "p99"},
						{expr: quantile(0.999, "", "loadgen_request_duration_seconds", sent), legend: "p99.9"},
					},
				},
				{
					kind: kindTimeseries, title: "p99 latency by scenario and endpoint", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 8, h: 8,
					description: "99th percentile client latency by scenario and endpoint. " + loadgenLatencyHelp +
						" Good: under 250 ms; the expensive endpoints (category stats, top products) spike at each " +
						"TTL expiry without XFetch.",
					targets: []target{{expr: quantile(0.99, ep, "loadgen_request_duration_seconds", sent), legend: "{{scenario}} {{endpoint}}"}},
				},
				{
					kind: kindTimeseries, title: "p99.9 latency by scenario and endpoint", unit: units.Seconds,
					thresholds: lowerIsBetter(0.5, 2), w: 8, h: 8,
					description: "99.9th percentile client latency by scenario and endpoint: the one-in-a-thousand " +
						"request, where stampedes and lock queues show first. " + loadgenLatencyHelp +
						" Good: under 500 ms. Needs enough traffic per endpoint to be meaningful.",
					targets: []target{{expr: quantile(0.999, ep, "loadgen_request_duration_seconds", sent), legend: "{{scenario}} {{endpoint}}"}},
				},
			}},
			{title: "Errors", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Error ratio by scenario", unit: units.PercentUnit,
					thresholds: lowerIsBetter(0.001, 0.01), w: 8, h: 8, showThresholds: true,
					description: "Share of each scenario's requests that failed: 5xx, timeout, transport error or dropped " +
						"(4xx such as 404 and 409 are expected answers and not counted). Good: 0; yellow from 0.1%, " +
						"red from 1%.",
					targets: []target{{expr: ratioOrZero(sumRate("scenario", "loadgen_requests_total", loadgenErrors), all), legend: "{{scenario}}"}},
				},
				{
					kind: kindTimeseries, title: "Errors by scenario and code", unit: units.RequestsPerSecond,
					thresholds: anyIsBad(0.001), w: 8, h: 8,
					description: "Failed requests per second by scenario and outcome: 5xx codes, timeout (no answer " +
						"within the client timeout), error (connection refused or reset) and dropped. The line with code " +
						"\"none\" is a zero baseline per scenario, so the panel is never blank. Good: only the \"none\" line.",
					targets: []target{{
						expr: sumRate("scenario, code", "loadgen_requests_total", loadgenErrors) +
							` or label_replace(` + all + ` * 0, "code", "none", "", "")`,
						legend: "{{scenario}} {{code}}",
					}},
				},
				{
					kind: kindTimeseries, title: "Dropped arrivals", unit: units.RequestsPerSecond,
					thresholds: anyIsBad(0.001), w: 8, h: 8,
					description: "Arrivals per second loadgen did not send because -max-in-flight requests were already " +
						"in flight. Good: a flat zero. Anything else means the API is too slow for the offered rate, and " +
						"the latency panels understate the damage because dropped requests are not in them.",
					targets: []target{{expr: sumRate("scenario", "loadgen_requests_total", `code="dropped"`) + " or " + all + " * 0", legend: "{{scenario}}"}},
				},
			}},
		},
	}
}
