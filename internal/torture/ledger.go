package torture

import (
	"context"
	"fmt"
	"sync"
	"time"

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
)

// ledgerSampler reads the products' ledgers (catalog.Audit) over and over
// while the run goes on, on a connection the faults do not touch, and keeps
// every problem it sees.
type ledgerSampler struct {
	db       *pgxpool.Pool
	products []int64
	start    time.Time

	mu        sync.Mutex
	samples   int
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

// atRest waits, up to limit, while the reconciler still has work on some
// product (units owed back or taken for an intent), then returns the
// problems of every ledger at rest. Other problems do not go away by
// waiting.
func atRest(ctx context.Context, db *pgxpool.Pool, products []int64, limit time.Duration) []Anomaly {
	deadline := time.Now().Add(limit)
	for {
		ls, err := catalog.Audit(ctx, db, products)
		if err != nil {
			return []Anomaly{{Check: checkRestName, Detail: fmt.Sprintf("audit: %v", err)}}
		}
		var out []Anomaly
		pending := false
		for _, led := range ls {
			pending = pending || led.Owed+led.Taking > 0
			for _, p := range led.Problems(true) {
				out = append(out, Anomaly{Check: checkRestName, Detail: p, Excerpt: []string{fmt.Sprintf("%+v", led)}})
			}
		}
		if !pending || time.Now().After(deadline) {
			return out
		}
		select {
		case <-ctx.Done():
			return out
		case <-time.After(200 * time.Millisecond):
		}
	}
}
