package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// cacheTTLs are the logical TTLs of the API's caches (catalog.Config
// defaults), for "recomputes per TTL window". Keep in step with the API.
var cacheTTLs = []struct {
	cache string
	ttl   int // seconds
}{
	{"category_stats", 10},
	{"product", 60},
	{"top_products", 30},
	{"search", 30},
}

// hitResults are the cachex_gets_total results that count as hits: answered
// from Redis without waiting for a recompute.
const hitResults = `result=~"hit|early_refresh|stale"`

// hitRatio is (hit + early_refresh + stale) / all gets, grouped by by.
func hitRatio(by string) string {
	return sumRate(by, "cachex_gets_total", hitResults) + " / " + sumRate(by, "cachex_gets_total")
}

const hitRatioHelp = "Hit ratio = (hit + early_refresh + stale) / all cache reads: the share of reads " +
	"answered from Redis without waiting for a recompute."

// cache is the XFetch cache dashboard.
func cache() boardSpec {
	return boardSpec{
		uid:   uidPrefix + "cache",
		title: "Cache (XFetch)",
		description: "The read-through cache in front of Postgres (internal/cachex): hit ratio, XFetch early refreshes, " +
			"recomputes (each one a Postgres query) and the failure signals. Switch the strategy with the admin API " +
			"and compare recomputes under xfetch and ttl.",
		tags: []string{"cache"},
		rows: []rowSpec{
			{title: "Hit ratio", panels: []panelSpec{
				{
					kind: kindStat, title: "Hit ratio (all caches)", unit: units.PercentUnit,
					thresholds: higherIsBetter(0.8), w: 6, h: 8, percent01: true,
					description: hitRatioHelp + " All caches and the selected instances, over the last minute or two. " +
						"Good: above 80% (green) once the cache is warm. It dips after a restart, a flush or a burst of " +
						"invalidations; red for long means many requests wait for Postgres.",
					targets: []target{{expr: hitRatio(""), legend: "hit ratio"}},
				},
				{
					kind: kindTimeseries, title: "Hit ratio by cache", unit: units.PercentUnit,
					thresholds: higherIsBetter(0.8), w: 18, h: 8, percent01: true, showThresholds: true,
					description: hitRatioHelp + " Per cache. search sees many distinct queries, so its ratio is lower; " +
						"category_stats and top_products have a few hot keys and should stay close to 100%. " +
						"The dashed line is the 80% threshold; a cache dropping under it at each expiry is stampeding.",
					targets: []target{{expr: hitRatio("cache"), legend: "{{cache}}"}},
				},
			}},
			{title: "Refreshes and recomputes", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Early refreshes by cache", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "XFetch early refreshes per second. \"triggered\": reads served from the cache that " +
						"decided to refresh the entry in the background (more likely the closer the entry is to expiry " +
						"and the slower its recompute). \"recomputed\": background refreshes that ran the loader; the rest " +
						"were deduplicated in-process or skipped because another instance held the refresh lock. " +
						"Good: a low, steady rate under strategy xfetch; zero under ttl and none.",
					targets: []target{
						{expr: sumRate("cache", "cachex_gets_total", `result="early_refresh"`), legend: "{{cache}} triggered"},
						{expr: sumRate("cache", "cachex_recomputes_total", `reason="early"`), legend: "{{cache}} recomputed"},
					},
				},
				{
					kind: kindTimeseries, title: "Recomputes by reason vs. gets", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 12, h: 8, rightAxis: []string{"B"},
					description: "Loader calls per second (each one a Postgres query), all caches, by reason: miss (no " +
						"entry: cold cache, eviction, invalidation), early (XFetch refresh before expiry, in the " +
						"background), expired (an entry found past its logical expiry and recomputed while the request " +
						"waited). Right axis: all cache reads per second, for scale. Good: recomputes are a tiny fraction " +
						"of reads and mostly \"early\"; spikes of expired or miss that follow the read rate are a " +
						"stampede (typical of strategy ttl).",
					targets: []target{
						{expr: sumRate("reason", "cachex_recomputes_total"), legend: "recompute: {{reason}}"},
						{expr: sumRate("", "cachex_gets_total"), legend: "gets (right axis)"},
					},
				},
				recomputesPerTTL(),
				{
					kind: kindTimeseries, title: "Recompute duration p50 / p99", unit: units.Seconds,
					thresholds: lowerIsBetter(0.25, 1), w: 12, h: 8,
					description: "How long a loader call (the Postgres query behind an entry) takes, per cache: median " +
						"and 99th percentile. This is XFetch's delta: the slower the recompute, the earlier the refresh " +
						"starts. Good: milliseconds for product, tens to a few hundred milliseconds for the aggregates " +
						"(category_stats, top_products). Rising values mean Postgres is under pressure (often from a " +
						"stampede) or has injected latency.",
					targets: []target{
						{expr: quantile(0.5, "cache", "cachex_recompute_duration_seconds"), legend: "{{cache}} p50"},
						{expr: quantile(0.99, "cache", "cachex_recompute_duration_seconds"), legend: "{{cache}} p99"},
					},
				},
			}},
			{title: "Refresh timing", panels: []panelSpec{
				{
					kind: kindHeatmap, title: "Early refresh lead time", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "How long before logical expiry each early refresh started, all caches (y axis: lead " +
						"time; darker cells: more refreshes per second). XFetch spreads refreshes out: most start shortly " +
						"before expiry, some much earlier, earlier still for slow recomputes. Good: a band clearly above " +
						"the recompute duration, so refreshes finish before the entry expires. Empty under strategies " +
						"ttl and none, which never refresh early.",
					targets: []target{{expr: sumRate("le", "cachex_refresh_lead_seconds_bucket"), legend: "{{le}}"}},
				},
				{
					kind: kindTimeseries, title: "Refresh lock contention", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "Early refreshes skipped per second because another API instance already held the " +
						"key's refresh lock: cross-instance deduplication at work (that instance refreshes, this one " +
						"keeps serving the current value). Good: low, and zero with a single instance. It is harmless " +
						"even when high: it only means both instances want to refresh the same hot keys.",
					targets: []target{{expr: sumRate("cache", "cachex_refresh_lock_contended_total"), legend: "{{cache}}"}},
				},
			}},
			{title: "Strategy and failures", panels: []panelSpec{
				{
					kind: kindTable, title: "Strategy per cache", unit: units.Short,
					thresholds: okAlways(), w: 8, h: 8,
					description: "The strategy each cache runs now, with the number of API instances running it: xfetch " +
						"(probabilistic early refresh, the default), ttl (plain read-through: the stampede baseline) or " +
						"none (no caching: every read queries Postgres). Change it with the admin API. Good: one row per " +
						"cache; two rows for one cache mean the instances disagree.",
					targets: []target{{expr: "count by (cache, strategy) (" + sel("cachex_strategy_info") + " == 1)", legend: "{{cache}} {{strategy}}"}},
				},
				{
					kind: kindTimeseries, title: "Stale and bypass serves", unit: units.OpsPerSecond,
					thresholds: anyIsBad(0.001), w: 8, h: 8, needs: needsRedisDown, noValue: "0: no stale or bypass serves",
					description: "Empty unless Redis is unavailable or recomputes fail: any line here is a fault being " +
						"absorbed. Reads per second answered without a fresh value: bypass = the cache's Redis was " +
						"unreachable, so the circuit breaker skipped Redis and computed directly (deduplicated per " +
						"process); stale = the recompute failed and the previous value, still within its grace window, " +
						"was served instead of an error.",
					targets: []target{{expr: onlyPositive(sumRate("cache, result", "cachex_gets_total", `result=~"stale|bypass"`)), legend: "{{cache}} {{result}}"}},
				},
				{
					kind: kindTimeseries, title: "Redis errors by operation", unit: units.OpsPerSecond,
					thresholds: anyIsBad(0.001), w: 8, h: 8, needs: needsRedisDown, noValue: "0: no Redis errors",
					description: "Empty unless Redis is unavailable (or an entry is corrupt): healthy is no data at all. " +
						"Failed cache operations per second by op: get, set, lock and unlock (the refresh lock), del " +
						"(invalidation), decode and encode (a corrupt or foreign entry, or a value that could not be " +
						"encoded; such entries are counted and recomputed).",
					targets: []target{{expr: onlyPositive(sumRate("op", "cachex_redis_errors_total")), legend: "{{op}}"}},
				},
			}},
		},
	}
}

// recomputesPerTTL is recomputes per second × TTL, one query per cache.
func recomputesPerTTL() panelSpec {
	p := panelSpec{
		kind: kindTimeseries, title: "Recomputes per TTL window", unit: units.Short,
		thresholds: okAlways(), w: 12, h: 8,
		description: "Recomputes per second × the cache's TTL (category_stats 10s, product 60s, top_products 30s, " +
			"search 30s): about how many loader calls each cache makes during one TTL. With N hot keys the ideal " +
			"is about N per window (each key recomputed once per TTL, early, by one instance); a stampede shows " +
			"as many times N, every concurrent reader of an expired key recomputing it. The TTLs are constants in " +
			"these queries: keep them in step with the API's configuration.",
	}
	for _, c := range cacheTTLs {
		p.targets = append(p.targets, target{
			expr:   fmt.Sprintf("%s * %d", sumRate("cache", "cachex_recomputes_total", fmt.Sprintf("cache=%q", c.cache)), c.ttl),
			legend: fmt.Sprintf("{{cache}} (TTL %ds)", c.ttl),
		})
	}
	return p
}
