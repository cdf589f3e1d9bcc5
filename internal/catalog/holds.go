package catalog

// The hold's state machine, in one place: every state a reservation row can
// be in, every move between them, each move's guard (the SQL condition under
// which it happens) and the store that holds the truth after it. The store
// methods run the statements below and nothing else changes a reservation's
// status; docs/api.md's table is checked against holdMoves
// (TestTheHoldTableIsTheDocs).

// Reservation statuses: the only place they are spelled.
const (
	// StatusPending marks the intent of a reservation, recorded before the
	// warehouse gives its units: it holds nothing, and the API answers it
	// as not found (docs/api.md#the-saga).
	StatusPending = "pending"
	// StatusActive marks a reservation that holds stock.
	StatusActive = "active"
	// StatusCancelled marks a reservation cancelled by its buyer: it holds
	// nothing, and its units go back to the warehouse.
	StatusCancelled = "cancelled"
	// StatusExpired marks a reservation that was not completed before its
	// ExpiresAt: the sweeper ended it, and its units go back to the
	// warehouse.
	StatusExpired = "expired"
)

// The statuses as SQL literals, for the statements below and the audit.
const (
	sqlPending   = `'` + StatusPending + `'`
	sqlActive    = `'` + StatusActive + `'`
	sqlCancelled = `'` + StatusCancelled + `'`
	sqlExpired   = `'` + StatusExpired + `'`
)

// The guards' parts that look across the two stores: whether the warehouse
// applied the take or the give of the reservation row being moved.
const (
	takeApplied = `EXISTS (SELECT FROM warehouse_moves m WHERE m.move_key = 'take:' || reservations.idempotency_key)`
	giveApplied = `EXISTS (SELECT FROM warehouse_moves m WHERE m.move_key = 'give:' || reservations.id)`
)

// holdMove names a move of the state machine; holdMoves describes each.
type holdMove int

const (
	moveIntend holdMove = iota
	moveClaimIntent
	moveActivate
	moveAbandon
	moveCancel
	moveExpire
	moveMarkGiven
	moveStocktakeActivate
	moveStocktakeMarkGiven
	numHoldMoves
)

// holdMoveSpec is one row of the state machine.
type holdMoveSpec struct {
	name     string // as docs/api.md names it
	from, to string // states, as docs/api.md names them
	by       string // who makes the move
	guard    string // the SQL condition under which the move happens
	truth    string // which store holds the truth once it committed
	sql      string // the statement the store runs
}

// reservationColumns are the columns scanReservation reads, in order.
const reservationColumns = `id, product_id, quantity, status, fence_token, idempotency_key, created_at, updated_at, expires_at, give_due`

// The guards, each a WHERE clause of its move's statement.
const (
	guardIntend      = `no reservation under the key (ON CONFLICT (idempotency_key) DO NOTHING)`
	guardClaim       = `status = ` + sqlPending + ` AND fence_token <= $2`
	guardActivate    = `status = ` + sqlPending + ` AND ` + takeApplied
	guardAbandon     = `status = ` + sqlPending + ` AND fence_token <= $2 AND NOT ` + takeApplied
	guardCancel      = `status = ` + sqlActive
	guardExpire      = `status = ` + sqlActive + ` AND expires_at <= now()`
	guardMarkGiven   = `give_due AND ` + giveApplied
	guardStocktakeOn = `product_id = $1 AND status = ` + sqlPending + ` AND ` + takeApplied
	guardStocktakeGv = `product_id = $1 AND give_due`
)

// holdMoves is the state machine. It is read, never written.
var holdMoves = [numHoldMoves]holdMoveSpec{
	moveIntend: {
		name: "intend", from: "none", to: "pending", by: "a reservation request, before any lock",
		guard: guardIntend, truth: "catalog: an intent that holds nothing",
		sql: `INSERT INTO reservations (product_id, quantity, status, fence_token, idempotency_key, expires_at)
VALUES ($1, $2, ` + sqlPending + `, 0, $3, now() + $4 * interval '1 millisecond')
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING ` + reservationColumns,
	},
	moveClaimIntent: {
		name: "claim", from: "pending", to: "pending", by: "an attempt of the key, under the product's guard, before its take",
		guard: guardClaim, truth: "catalog: the attempt with the newest token carries the intent on",
		sql: `UPDATE reservations SET fence_token = $2, updated_at = now() WHERE id = $1 AND ` + guardClaim,
	},
	moveActivate: {
		name: "activate", from: "pending", to: "active", by: "the attempt after its take; a look-up of an unknown outcome; the reconciler",
		guard: guardActivate, truth: "both: the hold records the units the warehouse gave (`reserved` + q in the same transaction)",
		sql: `UPDATE reservations SET status = ` + sqlActive + `, fence_token = greatest(fence_token, $2), updated_at = now()
WHERE id = $1 AND ` + guardActivate + `
RETURNING ` + reservationColumns,
	},
	moveAbandon: {
		name: "abandon", from: "pending", to: "removed", by: "an attempt whose take was refused or not sent, or the reconciler, once a fenced look-up found the take not applied",
		guard: guardAbandon, truth: "catalog: the key is free; no take of it is applied and none can land",
		sql: `DELETE FROM reservations WHERE id = $1 AND ` + guardAbandon,
	},
	moveCancel: {
		name: "cancel", from: "active", to: "cancelled, give due", by: "a cancel",
		guard: guardCancel, truth: "catalog: final for the buyer (`reserved` − q); the warehouse still owes the units",
		sql: `UPDATE reservations SET status = ` + sqlCancelled + `, give_due = true, updated_at = now()
WHERE id = $1 AND ` + guardCancel + `
RETURNING ` + reservationColumns,
	},
	moveExpire: {
		name: "expire", from: "active", to: "expired, give due", by: "the sweeper",
		guard: guardExpire, truth: "catalog: as cancel",
		sql: `UPDATE reservations SET status = ` + sqlExpired + `, give_due = true, updated_at = now()
WHERE id = $1 AND ` + guardExpire + `
RETURNING ` + reservationColumns,
	},
	moveMarkGiven: {
		name: "mark given", from: "cancelled/expired, give due", to: "cancelled/expired, given", by: "whoever applied the give: the request that ended the hold, its retry, the reconciler",
		guard: guardMarkGiven, truth: "both: the warehouse has the units back",
		sql: `UPDATE reservations SET give_due = false WHERE id = $1 AND ` + guardMarkGiven,
	},
	moveStocktakeActivate: {
		name: "stocktake: activate", from: "pending", to: "active", by: "a stocktake, in its transaction over both stores",
		guard: guardStocktakeOn, truth: "both",
		sql: `WITH done AS (
	UPDATE reservations SET status = ` + sqlActive + `, updated_at = now()
	WHERE ` + guardStocktakeOn + `
	RETURNING quantity)
UPDATE inventory SET reserved = reserved + (SELECT coalesce(sum(quantity), 0) FROM done), updated_at = now()
WHERE product_id = $1`,
	},
	moveStocktakeMarkGiven: {
		name: "stocktake: mark given", from: "cancelled/expired, give due", to: "cancelled/expired, given", by: "a stocktake: its new count includes the units",
		guard: guardStocktakeGv, truth: "both",
		sql: `UPDATE reservations SET give_due = false WHERE ` + guardStocktakeGv,
	},
}

// stocktakeRepair returns the statements a stocktake runs on product $1
// before it sets the stock, in order: intents whose take was applied become
// active, takes that no reservation records are voided (the warehouse side:
// their late retries take again), gives still due are recorded in the
// warehouse and marked given.
func stocktakeRepair() []string {
	return []string{
		holdMoves[moveStocktakeActivate].sql,
		`DELETE FROM warehouse_moves m WHERE m.product_id = $1 AND m.move_key LIKE 'take:%'
	AND NOT EXISTS (SELECT FROM reservations r WHERE 'take:' || r.idempotency_key = m.move_key)`,
		`INSERT INTO warehouse_moves (move_key, product_id, units)
	SELECT 'give:' || id, product_id, quantity FROM reservations WHERE product_id = $1 AND give_due
	ON CONFLICT (move_key) DO NOTHING`,
		holdMoves[moveStocktakeMarkGiven].sql,
	}
}
