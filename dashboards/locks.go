package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/units"

// attemptsPerAcquire is lock contention: SET NX attempts per acquired lock.
func attemptsPerAcquire(by string) string {
	return sumRate(by, "lockx_acquire_attempts_total") + " / " + sumRate(by, "lockx_acquire_total", `result="acquired"`)
}

const lostLockHelp = "A lock is lost when its holder can no longer prove it still holds it (the key expired or " +
	"changed owner before release, e.g. the holder paused longer than the TTL); the holder's context is cancelled " +
	"and its write is fenced."

const fencedHelp = "Reservation writes refused by Postgres because they carried an older fencing token than the " +
	"row's: a holder whose lock had expired tried to write after someone else took the lock. Each one is an " +
	"oversell that fencing prevented."

// locks is the locks and reservations dashboard.
func locks() boardSpec {
	return boardSpec{
		uid:   uidPrefix + "locks",
		title: "Locks and reservations",
		description: "The distributed lock (internal/lockx) that serializes reservations per product, and the " +
			"reservations it protects: acquisitions, contention, wait and hold times, and the safety signals " +
			"(lost locks, fenced writes). Run the reserve scenario to see contention.",
		tags: []string{"locks"},
		rows: []rowSpec{
			{title: "At a glance", panels: []panelSpec{
				{
					kind: kindStat, title: "Acquire success ratio", unit: units.PercentUnit,
					thresholds: higherIsBetter3(0.95, 0.99), w: 6, h: 5, percent01: true,
					description: "Share of lock acquisitions that got the lock within their wait budget (acquired / all " +
						"attempts to acquire), over the last minute or two. Good: above 99%. Timeouts mean a product's " +
						"lock stayed busy longer than the budget (a very hot SKU) or the lock's Redis was unavailable.",
					targets: []target{{expr: sumRate("", "lockx_acquire_total", `result="acquired"`) + " / " + sumRate("", "lockx_acquire_total"), legend: "success"}},
				},
				{
					kind: kindStat, title: "Attempts per acquisition", unit: units.Short,
					thresholds: lowerIsBetter(2, 5), w: 6, h: 5,
					description: "Lock contention: SET NX attempts per acquired lock, over the last minute or two. 1 means " +
						"every lock was free at the first try; 3 means two retries (with backoff) on average. Good: " +
						"below 2; higher under the reserve scenario's hot SKUs, which is the contention the lock exists " +
						"to serialize.",
					targets: []target{{expr: attemptsPerAcquire(""), legend: "attempts per acquisition"}},
				},
				{
					kind: kindStat, title: "Lost locks (time range)", unit: units.Short,
					thresholds: anyIsBad(0.5), w: 6, h: 5, instant: true, needs: needsLostLock, noValue: "0",
					description: "Empty (shown as 0) unless a lock is lost, e.g. with the holder-pause fault injection. " +
						"Locks lost while held in the dashboard's time range. " + lostLockHelp + " Good: 0.",
					targets: []target{{expr: onlyPositive(increaseOverRange("lockx_lost_total")), legend: "lost"}},
				},
				{
					kind: kindStat, title: "Fenced reservations (time range)", unit: units.Short,
					thresholds: anyIsBad(0.5), w: 6, h: 5, instant: true, needs: needsLostLock, noValue: "0",
					description: "Empty (shown as 0) unless a lock is lost, e.g. with the holder-pause fault injection. " +
						fencedHelp + " Counted over the dashboard's time range. Good: 0.",
					targets: []target{{expr: onlyPositive(increaseOverRange("catalog_reservations_total", `result="fenced"`)), legend: "fenced"}},
				},
			}},
			{title: "Acquisition", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Acquisitions by result", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 12, h: 8,
					description: "Acquire calls per second by result: acquired, timeout (the wait budget ran out while " +
						"another request held the lock), error (Redis failure, or the caller gave up). Good: nearly all " +
						"acquired; timeouts surface as 503 \"busy\" responses on POST /v1/reservations.",
					targets: []target{{expr: sumRate("name, result", "lockx_acquire_total"), legend: "{{name}} {{result}}"}},
				},
				{
					kind: kindTimeseries, title: "Contention: attempts per acquisition", unit: units.Short,
					thresholds: lowerIsBetter(2, 5), w: 12, h: 8, showThresholds: true,
					description: "rate(lockx_acquire_attempts_total) / rate(lockx_acquire_total{result=\"acquired\"}): SET NX " +
						"attempts per acquired lock. 1 = no contention; each extra attempt is a retry after backoff " +
						"because someone else held the lock. Good: below 2 (dashed yellow line); sustained values above 5 " +
						"mean requests queue behind each other (see wait time).",
					targets: []target{{expr: attemptsPerAcquire("name"), legend: "{{name}}"}},
				},
				{
					kind: kindTimeseries, title: "Wait time p50 / p99", unit: units.Seconds,
					thresholds: lowerIsBetter(0.1, 0.5), w: 12, h: 8,
					description: "Time from calling Acquire to holding the lock (or giving up), median and 99th " +
						"percentile. Good: p50 near zero (the lock was free), p99 within a few hold times. A p99 at the " +
						"wait budget means acquisitions are timing out.",
					targets: []target{
						{expr: quantile(0.5, "name", "lockx_acquire_wait_seconds"), legend: "{{name}} p50"},
						{expr: quantile(0.99, "name", "lockx_acquire_wait_seconds"), legend: "{{name}} p99"},
					},
				},
				{
					kind: kindTimeseries, title: "Hold time p50 / p99", unit: units.Seconds,
					thresholds: lowerIsBetter(0.1, 0.5), w: 12, h: 8,
					description: "Time from acquiring the lock to releasing (or losing) it: the critical section, here " +
						"the Postgres transaction that checks stock and writes the reservation. Good: milliseconds, far " +
						"below the lock's TTL. A hold time approaching the TTL risks the lock expiring while held.",
					targets: []target{
						{expr: quantile(0.5, "name", "lockx_held_seconds"), legend: "{{name}} p50"},
						{expr: quantile(0.99, "name", "lockx_held_seconds"), legend: "{{name}} p99"},
					},
				},
			}},
			{title: "Safety", panels: []panelSpec{
				{
					kind: kindTimeseries, title: "Lost locks", unit: units.OpsPerSecond,
					thresholds: anyIsBad(0.001), w: 12, h: 8, needs: needsLostLock, noValue: "0: no lock lost",
					description: "Empty unless a lock is lost, e.g. with the holder-pause fault injection. Locks lost " +
						"while held, per second. " + lostLockHelp + " Any line here should come with fenced " +
						"reservations, not with oversold stock.",
					targets: []target{{expr: onlyPositive(sumRate("name", "lockx_lost_total")), legend: "{{name}}"}},
				},
				{
					kind: kindTimeseries, title: "Reservations by result", unit: units.OpsPerSecond,
					thresholds: okAlways(), w: 8, h: 8,
					description: "Reservation requests per second by outcome: reserved (stock taken), insufficient (not " +
						"enough stock: a correct refusal, common once the reserve scenario drains a SKU), duplicate (an " +
						"idempotent replay), lock_timeout (the product's lock stayed busy past the wait budget, or its " +
						"Redis was unavailable), fenced (the write carried a stale fencing token after a lost lock, and " +
						"Postgres refused it). Good: reserved and insufficient only; " +
						"fenced appears only under fault injection.",
					targets: []target{{expr: sumRate("result", "catalog_reservations_total"), legend: "{{result}}"}},
				},
			}},
		},
	}
}
