-- Reservations are holds that expire: an active reservation past expires_at
-- is ended by the API's sweeper, which gives its units back exactly once.

ALTER TABLE reservations ADD COLUMN expires_at timestamptz NOT NULL DEFAULT now() + interval '15 minutes';
ALTER TABLE reservations ALTER COLUMN expires_at DROP DEFAULT;

ALTER TABLE reservations DROP CONSTRAINT reservations_status_check,
    ADD CONSTRAINT reservations_status_check CHECK (status IN ('active', 'cancelled', 'expired'));

-- The sweeper's scan: active holds by expiry.
CREATE INDEX reservations_expiry_idx ON reservations (expires_at) WHERE status = 'active';
