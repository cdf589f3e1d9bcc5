-- The warehouse applies each move of units once. A reservation's take is
-- keyed by its idempotency key, a give by the reservation's id: a retry of
-- a move whose catalog transaction failed after the warehouse had committed
-- it finds it applied and moves nothing again.

CREATE TABLE warehouse_moves (
    move_key    text        PRIMARY KEY,
    product_id  bigint      NOT NULL REFERENCES products (id),
    units       integer     NOT NULL,
    moved_at    timestamptz NOT NULL DEFAULT now()
);
