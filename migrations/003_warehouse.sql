-- The warehouse is the system of record for units: a second store that knows
-- how many units of each product are free and accepts absolute writes ("set
-- available to N"). Reservations read it, decide, and write the new count: a
-- read-modify-write only the product's lock serialises, and only the fencing
-- token makes safe when a lock is lost. It has, on purpose, no constraint
-- that could refuse an oversell: see docs/experiments/02-lost-lock.md.

CREATE TABLE warehouse (
    product_id   bigint      PRIMARY KEY REFERENCES products (id),
    available    integer     NOT NULL,
    -- Highest fencing token that has read or written the row in fenced mode;
    -- accesses carrying a lower token are refused (internal/lockx/pgfence).
    fence_token  bigint      NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Setting a product's stock in the catalog (the seed, a stocktake) stocks
-- the warehouse with what is not reserved. Reservations change only
-- inventory.reserved, so they never fire it.
CREATE FUNCTION warehouse_stocktake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO warehouse (product_id, available) VALUES (NEW.product_id, NEW.stock - NEW.reserved)
    ON CONFLICT (product_id) DO UPDATE SET available = EXCLUDED.available, updated_at = now();
    RETURN NEW;
END $$;

CREATE TRIGGER inventory_stocktake AFTER INSERT OR UPDATE OF stock ON inventory
    FOR EACH ROW EXECUTE FUNCTION warehouse_stocktake();

INSERT INTO warehouse (product_id, available, fence_token)
SELECT product_id, stock - reserved, fence_token FROM inventory;

-- The catalog records what the warehouse granted; the fence moved to the
-- warehouse, and reserved may exceed stock exactly when units were oversold.
ALTER TABLE inventory DROP CONSTRAINT inventory_reserved_within_stock,
                      DROP COLUMN fence_token,
                      ADD CONSTRAINT inventory_reserved_not_negative CHECK (reserved >= 0);
