package torture

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-lab/stampede/internal/catalog"
)

// The reserve workload's checks.
const (
	checkHoldsName    = "holds linearizable per key (reserve, read, cancel, expiry)"
	checkLedgerName   = "every unit in one place, at every sample"
	checkRestName     = "at rest, every unit held or free"
	checkOversoldName = "nothing oversold"
	checkReplayName   = "replays return the reservation"
	checkNo500Name    = "no answer is a 500"
	checkReadyName    = "every instance ready once the faults are over"
	// The checks of the orphaning retry (the row_lock fault).
	checkOrphanedName   = "orphaned: at rest, no unit taken for a key that no reservation holds"
	checkNoOrphanName   = "orphaned at any sample: in fenced mode without flaws, no unit is ever taken for a key that no reservation holds"
	checkUntruthfulName = "untruthful-refusal: no 409 for a key whose take was applied before the answer"
)

// ledgerSampler reads the products' ledgers (catalog.Audit) over and over
// while the run goes on, on a connection the faults do not touch, and keeps
// every problem it sees.
type ledgerSampler struct {
	db       *pgxpool.Pool
	products []int64
	start    time.Time

	mu sync.Mutex
	// strict makes an orphaned unit at any sample an anomaly: in fenced
	// mode the saga never removes an intent whose take landed or can land.
	strict    bool
	samples   int
	orphaned  int // ledgers sampled with orphaned units: none until a take outlives its intent
	anomalies []Anomaly
}

// run samples every 100 ms until ctx ends.
func (l *ledgerSampler) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.sample(ctx)
		}
	}
}

func (l *ledgerSampler) sample(ctx context.Context) {
	ls, err := catalog.Audit(ctx, l.db, l.products)
	if err != nil {
		return // the run's end, or the database itself failing: the next sample tells
	}
	at := time.Since(l.start).Round(time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples++
	for _, led := range ls {
		if led.Orphaned > 0 {
			l.orphaned++
			if l.strict {
				l.anomalies = append(l.anomalies, Anomaly{Check: checkNoOrphanName,
					Detail: fmt.Sprintf("at %v: product %d: %d units orphaned", at, led.ProductID, led.Orphaned), Excerpt: []string{fmt.Sprintf("%+v", led)}})
			}
		}
		for _, p := range led.Problems(false) {
			l.anomalies = append(l.anomalies, Anomaly{Check: checkLedgerName, Detail: fmt.Sprintf("at %v: %s", at, p),
				Excerpt: []string{fmt.Sprintf("%+v", led)}})
		}
		if led.Reserved > led.Stock {
			l.anomalies = append(l.anomalies, Anomaly{Check: checkOversoldName,
				Detail: fmt.Sprintf("at %v: product %d: %d units reserved of a stock of %d", at, led.ProductID, led.Reserved, led.Stock)})
		}
	}
}

// awaitRest waits, up to limit, until the run is at rest: on no product
// does the reconciler still have work (units owed back, units taken for an
// intent, an intent not yet decided), twice in a row a second apart, so
// that a step still finishing on a context of its own has landed. It
// returns the ledgers then, or when limit passed (rested false).
func awaitRest(ctx context.Context, db *pgxpool.Pool, products []int64, limit time.Duration) (ls []catalog.Ledger, rested bool, err error) {
	deadline := time.Now().Add(limit)
	quiet := 0
	for {
		if ls, err = catalog.Audit(ctx, db, products); err != nil {
			return nil, false, err
		}
		var pending int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM reservations WHERE status = 'pending' AND product_id = ANY($1)`, products).Scan(&pending); err != nil {
			return nil, false, fmt.Errorf("pending intents: %w", err)
		}
		busy := pending > 0
		for _, led := range ls {
			busy = busy || led.Owed+led.Taking > 0
		}
		if quiet = quiet + 1; busy {
			quiet = 0
		}
		if quiet == 2 || time.Now().After(deadline) {
			return ls, quiet == 2, nil
		}
		pause := time.Second
		if busy {
			pause = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ls, false, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// atRest waits for the run to be at rest (awaitRest) and returns the
// problems of every ledger then, and each product's orphaned units with
// the keys whose takes orphaned them and what their clients were told.
func atRest(ctx context.Context, db *pgxpool.Pool, products []int64, limit time.Duration, h *reserveHistory, start time.Time) []Anomaly {
	ls, rested, err := awaitRest(ctx, db, products, limit)
	if err != nil {
		return []Anomaly{{Check: checkRestName, Detail: fmt.Sprintf("audit: %v", err)}}
	}
	var out []Anomaly
	if !rested {
		out = append(out, Anomaly{Check: checkRestName, Detail: fmt.Sprintf("not at rest %v after the clients settled: the reconciler still has work", limit)})
	}
	for _, led := range ls {
		for _, p := range led.Problems(true) {
			out = append(out, Anomaly{Check: checkRestName, Detail: p, Excerpt: []string{fmt.Sprintf("%+v", led)}})
		}
		if led.Orphaned > 0 {
			out = append(out, Anomaly{Check: checkOrphanedName,
				Detail:  fmt.Sprintf("product %d: at rest, %d units taken by the warehouse for keys that no reservation holds: out of sale for good", led.ProductID, led.Orphaned),
				Excerpt: orphanedTakes(ctx, db, led.ProductID, h, start)})
		}
	}
	return out
}

// orphanedTakes lists the takes of product that no reservation holds, each
// with the operations of its key.
func orphanedTakes(ctx context.Context, db *pgxpool.Pool, product int64, h *reserveHistory, start time.Time) []string {
	rows, err := db.Query(ctx, `SELECT m.move_key, m.units, m.moved_at FROM warehouse_moves m
		WHERE m.product_id = $1 AND m.move_key LIKE 'take:%'
		  AND NOT EXISTS (SELECT FROM reservations x WHERE 'take:' || x.idempotency_key = m.move_key)
		ORDER BY m.moved_at`, product)
	if err != nil {
		return []string{fmt.Sprintf("listing the orphaned takes: %v", err)}
	}
	var (
		out   []string
		key   string
		units int
		at    time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&key, &units, &at}, func() error {
		key := strings.TrimPrefix(key, "take:")
		out = append(out, fmt.Sprintf("key %q: %d units taken at %v", key, units, at.Sub(start).Round(time.Millisecond)))
		out = append(out, h.opsOf(key, start)...)
		return nil
	})
	if err != nil {
		return []string{fmt.Sprintf("listing the orphaned takes: %v", err)}
	}
	return out
}

// untruthful reports whether r answered 409 though its key's take had been
// applied before the answer, by the look-up right after it or by restAt
// (taken: the take was there at rest), and returns when it was.
func (r refusal) untruthful(restAt time.Time, taken bool) (time.Time, bool) {
	at := restAt
	if r.taken && (!taken || r.takenAt.Before(at)) {
		at, taken = r.takenAt, true
	}
	return at, taken && at.UnixNano() < r.ret
}

// untruthfulRefusals returns an anomaly for every 409 (insufficient stock,
// fenced: "nothing was reserved") answered for a key whose take the
// warehouse had applied before the answer came: when it was looked up
// right after the answer, or at rest. A take begun after the answer is a
// later attempt's and does not count.
func untruthfulRefusals(ctx context.Context, db *pgxpool.Pool, h *reserveHistory, start time.Time) []Anomaly {
	keys := make([]string, 0, len(h.refusals))
	for _, r := range h.refusals {
		keys = append(keys, catalog.TakeKey(r.key))
	}
	takenAt := map[string]time.Time{}
	rows, err := db.Query(ctx, `SELECT move_key, moved_at FROM warehouse_moves WHERE move_key = ANY($1)`, keys)
	if err == nil {
		var key string
		var at time.Time
		_, err = pgx.ForEachRow(rows, []any{&key, &at}, func() error {
			takenAt[strings.TrimPrefix(key, "take:")] = at
			return nil
		})
	}
	if err != nil {
		return []Anomaly{{Check: checkUntruthfulName, Detail: fmt.Sprintf("reading the takes of the refused keys: %v", err)}}
	}
	var out []Anomaly
	for _, r := range h.refusals {
		restAt, taken := takenAt[r.key]
		at, untruthful := r.untruthful(restAt, taken)
		if !untruthful {
			continue
		}
		out = append(out, Anomaly{Check: checkUntruthfulName,
			Detail: fmt.Sprintf("key %q answered 409 %s at %v by API %d, though its take was applied at %v: its units were taken, not \"nothing reserved\"",
				r.key, r.problem, time.Duration(r.ret-start.UnixNano()).Round(time.Millisecond), r.api, at.Sub(start).Round(time.Millisecond)),
			Excerpt: h.opsOf(r.key, start)})
	}
	return out
}
