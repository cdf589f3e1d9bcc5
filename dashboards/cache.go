package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/units"

// hitResults are the cachex_gets_total results that count as hits: answered
// from Redis without waiting for a recompute.
const hitResults = `result=~"hit|early_refresh|stale"`

// hitRatio is (hit + early_refresh + stale) / all gets, grouped by by; a
// group without gets in the window has no point, not NaN.
func hitRatio(by string) string {
	return sumRate(by, "cachex_gets_total", hitResults) + " / " + nonZero(sumRate(by, "cachex_gets_total"))
}

// hitRatioByCache is hitRatio("cache") for the caches whose reads were not
// all misses: a cache every read of which missed (each key read less often
// than its TTL, or a cold start) has no point rather than 0%. A cache whose
// Redis is down still shows 0%: its reads are bypasses, not misses.
func hitRatioByCache() string {
	return "(" + hitRatio("cache") + ") and on (cache) (" + sumRate("cache", "cachex_gets_total", `result!="miss"`) + " > 0)"
}

const (
	hitRatioHelp = "Hit ratio = (hit + early_refresh + stale) / all cache reads: the share of reads " +
		"answered from Redis without waiting for a recompute."
	hitRatioDemo = "The demo at rest: about 75%. Green from 70%; red under 50%, where StampedeHitRatioCollapse " +
		"fires (a flush, evictions or Redis unreachable). A stampede hardly moves it: only the reads at each " +
		"expiry of the hot keys miss (98.7% under ttl in experiment 1); watch recomputes and client p99 instead."
	hitRatioByCacheDemo = "In the demo, product (about 76%) and search (about 85%) have many keys read at " +
		"random; top_products (35-65%) and category_stats are read for each non-hot category only every ~18 s, " +
		"longer than a stats entry lives (10 s), so those reads miss by design. A cache none of whose reads found " +
		"its key (every read the first of its key within the TTL: category_stats between the bursts) has no " +
		"line rather than 0%: no reads a cache could serve, not a broken cache. A cache whose Redis is down " +
		"still shows 0% (its reads are bypasses). During a burst on the hot categories category_stats rises to " +
		"~98% under xfetch and ~80% under ttl. Dashed lines: 50% (the alert) and 70%."
)

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
					thresholds: higherIsBetter3(hitRatioLow, hitRatioOK), w: 6, h: 8, percent01: true,
					description: hitRatioHelp + " All caches and the selected instances, over the last minute or two. " +
						hitRatioDemo,
					targets: []target{{expr: hitRatio(""), legend: "hit ratio"}},
				},
				{
					kind: kindTimeseries, title: "Hit ratio by cache", unit: units.PercentUnit,
					thresholds: higherIsBetter3(hitRatioLow, hitRatioOK), w: 18, h: 8, percent01: true, showThresholds: true,
					noValue:     "no reads a cache could serve",
					description: hitRatioHelp + " Per cache. " + hitRatioByCacheDemo,
					targets:     []target{{expr: hitRatioByCache(), legend: "{{cache}}"}},
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
				recomputesPerKey("", ""),
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
				{
					kind: kindTimeseries, title: "Duplicate recomputes by cache", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 24, h: 8,
					description: "Recomputes per second whose value was thrown away because another recompute of the " +
						"same key had stored one first (cachex_recomputes_discarded_total), or an invalidation came " +
						"in between: a stampede's wasted Postgres queries. xfetch: none (one instance refreshes each " +
						"key, early, under its refresh lock). ttl: every reader that finds a hot key expired recomputes " +
						"it, and all but the first of those values are discarded. StampedeRecomputeStorm fires on " +
						"recomputes per stored value (ok recomputes / (ok - discarded)) over 1.25, or on a key recomputed " +
						"more than 3 times in its TTL window (Recomputes of the hottest key per TTL window); the guided " +
						"experiments bound an xfetch phase's duplicates per key per TTL window.",
					targets: []target{{expr: sumRate("cache", "cachex_recomputes_discarded_total"), legend: "{{cache}}"}},
				},
			}},
		},
	}
}

// recomputesPerKey is the panel of the recomputes of each cache's hottest
// key per TTL window (catalog_hottest_key_recomputes, the highest of the
// instances), labelled with the strategy in force. Unlike recomputes per
// stored value it is not averaged over every key of the cache, so a
// stampede on three hot keys among forty shows in full. link (optional) is
// the dashboard its title links to.
func recomputesPerKey(link, linkTitle string) panelSpec {
	strategy := "topk by (cache) (1, max by (cache, strategy) (" + sel("cachex_strategy_info") + ") == 1)"
	return panelSpec{
		kind: kindTimeseries, title: "Recomputes of the hottest key per TTL window", unit: units.Short,
		thresholds: lowerIsBetter(recomputeStormWarn, recomputeStormBad), w: 12, h: 8, showThresholds: true,
		link: link, linkTitle: linkTitle,
		description: "Per cache, labelled with its strategy: how many times its most recomputed key was recomputed " +
			"(each time a Postgres query) in the last complete TTL window, the highest of the API instances " +
			"(catalog_hottest_key_recomputes). xfetch: 1 (one instance refreshes each key, early). ttl: every " +
			"reader that finds the hot key expired recomputes it, so a burst reads well above 1 (" + recomputeStormText +
			" in the demo's bursts); StampedeRecomputeStorm fires above 3. 0: nothing was recomputed in the window.",
		targets: []target{{expr: "max by (cache) (" + sel("catalog_hottest_key_recomputes") + ") * on (cache) group_left (strategy) " + strategy,
			legend: "{{cache}} ({{strategy}})"}},
	}
}
