-- A reservation, a cancel and an expiry are sagas across the catalog and the
-- warehouse: the catalog records what is owed before the warehouse moves
-- units, so that a cut between the two leaves units unavailable for a
-- while, never sold twice (docs/api.md#the-saga).
--
-- pending: the intent of a reservation, recorded before its take; it holds
--          nothing and the API does not show it. It becomes active once the
--          warehouse has given the units, or is removed when it is known
--          that it never took any.
-- give_due: an ended hold (cancelled, expired) whose units the warehouse has
--          not been told to take back yet; set in the transaction that ends
--          the hold, cleared once the give is applied.

ALTER TABLE reservations DROP CONSTRAINT reservations_status_check,
    ADD CONSTRAINT reservations_status_check CHECK (status IN ('pending', 'active', 'cancelled', 'expired'));

ALTER TABLE reservations ADD COLUMN give_due boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT reservations_give_due_when_ended CHECK (NOT give_due OR status IN ('cancelled', 'expired'));

-- The reconciler's scans: gives owed, and intents left behind.
CREATE INDEX reservations_give_due_idx ON reservations (updated_at) WHERE give_due;
CREATE INDEX reservations_pending_idx ON reservations (created_at) WHERE status = 'pending';
