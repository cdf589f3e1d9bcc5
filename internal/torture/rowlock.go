package torture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The row_lock fault is the orphaning retry's nemesis, in three parts that only
// together orphan units:
//
//  1. A session of the checker's holds the products' inventory rows (FOR
//     UPDATE), so an activation, which adds to inventory.reserved, waits:
//     an attempt that took its units in the warehouse answers 503 "retry"
//     after its two 5-s finishing steps, its intent still pending with the
//     take applied. The reconcilers, which activate such intents with no
//     time limit, stop on the first one each and wait there too.
//  2. The instance the fault names gets every database call slowed by
//     rowLockDBDelay (its admin knob db_latency_ms, at 100 %): a request
//     there loses its product lock between the claim of its intent and its
//     take, so its take is not sent.
//  3. The clients retry a 503 at once on the other instance
//     (reserveClient.reserve): the 503s of the fast instance go to the slow
//     one.
//
// A retry that finds its lock lost before its take must not take the key's
// intent away while the first attempt's take is applied; the code before
// the look-up did, answering 409 fenced ("nothing was reserved") and leaving the
// units orphaned.

// rowLockDBDelay is what the row_lock fault adds to each database call of
// its instance: past the lock's validity (the 5-s TTL less drift and the
// 0.5-s safety margin, 4.45 s) from its acquisition to the end of the
// intent's claim, and within the 5-s timeout of the step an attempt
// finishes on a context of its own (the intent's removal), so that the
// removal runs. Two calls before the take (the intent, the claim) still fit
// in the requests' 10-s server-side deadline when the product's lock comes
// within 0.8 s.
const rowLockDBDelay = 4600 * time.Millisecond

// holdRows locks the inventory rows of products in a transaction on db
// until release is called: every activation of a hold of theirs waits.
func holdRows(ctx context.Context, db *pgxpool.Pool, products []int64) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("row_lock: %w", err)
	}
	_, err = tx.Exec(ctx, `SELECT 1 FROM inventory WHERE product_id = ANY($1) ORDER BY product_id FOR UPDATE`, products)
	if err != nil {
		_ = tx.Rollback(context.Background())
		return nil, fmt.Errorf("row_lock: %w", err)
	}
	return func() { _ = tx.Rollback(context.Background()) }, nil
}

// slowDatabase sets the database latency knob of api: every query waits d
// first (0 turns it off). Other knobs stay as they are.
func slowDatabase(api *apiProcess, d time.Duration) error {
	percent := 100
	if d == 0 {
		percent = 0
	}
	return patchFaults(api, fmt.Sprintf(`{"db_latency_ms": %d, "db_latency_percent": %d}`, d.Milliseconds(), percent))
}

// patchFaults sets some of api's fault knobs (PATCH /admin/faults), leaving
// the others as they are.
func patchFaults(api *apiProcess, body string) error {
	req, err := http.NewRequest(http.MethodPatch, api.URL()+"/admin/faults", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PATCH %s/admin/faults %s: %s", api.URL(), body, resp.Status)
	}
	return nil
}

// rowLocks holds the products' inventory rows while any row_lock fault is
// on: two at once (one per instance) share the hold.
type rowLocks struct {
	db       *pgxpool.Pool
	products []int64

	mu      sync.Mutex
	holders int
	release func()
}

// hold holds the rows, or counts one more holder of the rows held.
func (l *rowLocks) hold() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holders == 0 {
		release, err := holdRows(context.Background(), l.db, l.products)
		if err != nil {
			return err
		}
		l.release = release
	}
	l.holders++
	return nil
}

// unhold releases the rows when the last holder goes.
func (l *rowLocks) unhold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holders--; l.holders == 0 {
		l.release()
	}
}

// rowLockFault returns the injector's row_lock hook: on API node n it holds
// products' inventory rows on db and slows that instance's database; the
// func it returns undoes whatever was done, also when it failed halfway.
func rowLockFault(db *pgxpool.Pool, products []int64, api func(n int) *apiProcess) func(n int) (func() error, error) {
	rows := &rowLocks{db: db, products: products}
	return func(n int) (func() error, error) {
		p := api(n)
		if p == nil {
			return nil, fmt.Errorf("row_lock: node %d is not an API process", n)
		}
		if err := rows.hold(); err != nil {
			return nil, err
		}
		undo := func() error { rows.unhold(); return slowDatabase(p, 0) }
		if err := slowDatabase(p, rowLockDBDelay); err != nil {
			return undo, errors.Join(err, undo())
		}
		return undo, nil
	}
}
