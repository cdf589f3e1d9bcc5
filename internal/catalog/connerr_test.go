package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestLostConnectionsAreRetryable: the errors of a database connection that
// was cut or could not be had are answered 503, not 500. cmd/torture found
// the last two answered 500 by a stocktake: a pooled connection the driver
// had closed ("conn closed") and a server out of connections (53300).
func TestLostConnectionsAreRetryable(t *testing.T) {
	t.Parallel()
	lost := map[string]error{
		"terminated":         &pgconn.PgError{Code: "57P01"},
		"connection fail":    &pgconn.PgError{Code: "08006"},
		"unexpected EOF":     fmt.Errorf("read: %w", io.ErrUnexpectedEOF),
		"conn closed":        fmt.Errorf("catalog: inventory: %w", pgconn.ErrConnClosed),
		"too many clients":   fmt.Errorf("catalog: inventory: %w", &pgconn.ConnectError{}),
		"out of connections": &pgconn.PgError{Code: "53300"},
	}
	for name, err := range lost {
		if !isConnectionLost(err) {
			t.Errorf("%s (%v) is not taken for a lost connection", name, err)
		}
	}
	for name, err := range map[string]error{
		"unique violation": &pgconn.PgError{Code: "23505"},
		"a bug":            errors.New("nil map"),
		"cancelled":        context.Canceled,
	} {
		if isConnectionLost(err) {
			t.Errorf("%s (%v) is taken for a lost connection", name, err)
		}
	}
}
