package catalog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger is where a product's units are, as the catalog and the warehouse
// record them at one instant: the checkers' view across both stores
// (docs/api.md#the-saga). Every unit of Stock is in exactly one place.
type Ledger struct {
	ProductID int64 `json:"product_id"`
	// Stock is the catalog's count of units on hand.
	Stock int `json:"stock"`
	// Reserved is the catalog's count of held units (inventory.reserved).
	Reserved int `json:"reserved"`
	// Held is the sum of the active holds.
	Held int `json:"held"`
	// Free is the warehouse's count of units for sale.
	Free int `json:"free"`
	// Owed is the units of ended holds whose give the warehouse has not
	// applied yet: out of sale until the reconciler gives them back.
	Owed int `json:"owed"`
	// Taking is the units the warehouse gave intents that are not active
	// yet: out of sale until they are made active.
	Taking int `json:"taking"`
	// Orphaned is the units of takes no reservation records (a take that
	// landed after its intent was removed): out of sale until a retry of
	// its key or a stocktake.
	Orphaned int `json:"orphaned"`
	// GivesOfHeld counts gives the warehouse applied for holds that are not
	// ended: their units are free and held at once.
	GivesOfHeld int `json:"gives_of_held"`
	// Untaken counts active or ended holds whose take the warehouse never
	// applied: units held that it never gave.
	Untaken int `json:"untaken"`
}

// Problems lists what is wrong with l: units that could be sold twice or
// that came from nowhere (Held + Free + Owed + Taking + Orphaned is not
// Stock), a catalog count unlike its holds, a give of a hold still held, a
// hold without its take; atRest also wants every unit held or free.
func (l Ledger) Problems(atRest bool) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if sum := l.Held + l.Free + l.Owed + l.Taking + l.Orphaned; sum != l.Stock {
		add("product %d: %d held + %d free + %d owed + %d taking + %d orphaned = %d units, of a stock of %d",
			l.ProductID, l.Held, l.Free, l.Owed, l.Taking, l.Orphaned, sum, l.Stock)
	}
	if l.Reserved != l.Held {
		add("product %d: reserved counts %d units, the active holds %d", l.ProductID, l.Reserved, l.Held)
	}
	if l.GivesOfHeld > 0 {
		add("product %d: %d holds still held had their units given back", l.ProductID, l.GivesOfHeld)
	}
	if l.Untaken > 0 {
		add("product %d: %d holds hold units the warehouse never gave", l.ProductID, l.Untaken)
	}
	if atRest && l.Held+l.Free != l.Stock {
		add("product %d: at rest, %d units neither held nor free (%d owed, %d taking, %d orphaned)",
			l.ProductID, l.Stock-l.Held-l.Free, l.Owed, l.Taking, l.Orphaned)
	}
	return out
}

// Audit reads the ledgers of products in one statement, so both stores are
// seen at one instant. It reads the tables directly: it is for checkers
// and operators, not for the API's requests.
func Audit(ctx context.Context, db *pgxpool.Pool, products []int64) ([]Ledger, error) {
	rows, err := db.Query(ctx, sqlAudit, products)
	if err != nil {
		return nil, fmt.Errorf("catalog: audit: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Ledger, error) {
		var l Ledger
		err := row.Scan(&l.ProductID, &l.Stock, &l.Reserved, &l.Free, &l.Held, &l.Owed, &l.Taking, &l.GivesOfHeld, &l.Untaken, &l.Orphaned)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: audit: %w", err)
	}
	return out, nil
}

const sqlAudit = `
SELECT i.product_id, i.stock, i.reserved, w.available,
    coalesce(sum(r.quantity) FILTER (WHERE r.status = ` + sqlActive + `), 0),
    coalesce(sum(r.quantity) FILTER (WHERE r.give_due AND g.move_key IS NULL), 0),
    coalesce(sum(r.quantity) FILTER (WHERE r.status = ` + sqlPending + ` AND t.move_key IS NOT NULL), 0),
    count(r.id) FILTER (WHERE r.status IN (` + sqlPending + `, ` + sqlActive + `) AND g.move_key IS NOT NULL),
    count(r.id) FILTER (WHERE r.status <> ` + sqlPending + ` AND t.move_key IS NULL),
    (SELECT coalesce(sum(m.units), 0) FROM warehouse_moves m
     WHERE m.product_id = i.product_id AND m.move_key LIKE 'take:%'
       AND NOT EXISTS (SELECT FROM reservations x WHERE 'take:' || x.idempotency_key = m.move_key))
FROM inventory i
JOIN warehouse w USING (product_id)
LEFT JOIN reservations r ON r.product_id = i.product_id
LEFT JOIN warehouse_moves t ON t.move_key = 'take:' || r.idempotency_key
LEFT JOIN warehouse_moves g ON g.move_key = 'give:' || r.id
WHERE i.product_id = ANY($1)
GROUP BY i.product_id, i.stock, i.reserved, w.available
ORDER BY i.product_id`
