package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stampede-lab/stampede/internal/lockx"
)

// guard is what a reservation or a cancel holds while it reads and writes
// the warehouse: nothing in ModeUnsafe, the product's lock otherwise, with
// its token checked by the warehouse in ModeFenced.
type guard struct {
	// ctx is the context of the writes: the lock's, which ends when the
	// lock is lost, or the caller's without a lock.
	ctx   context.Context
	fence Fence
	lk    *lockx.Lock
}

// guard takes what the instance's mode asks for on a product. It fails with
// the caller's context error if that ends first, ErrLockBusy otherwise.
func (s *Service) guard(ctx context.Context, productID int64) (*guard, error) {
	mode := s.mode.get()
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("catalog.reserve.mode", string(mode)))
	if mode == ModeUnsafe {
		return &guard{ctx: ctx}, nil
	}
	lk, err := s.locker.Acquire(ctx, strconv.FormatInt(productID, 10))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrLockBusy, err)
	}
	return &guard{ctx: lk.Context(), lk: lk, fence: Fence{Token: lk.Token(), Checked: mode == ModeFenced}}, nil
}

// lost reports whether the guard's lock was lost.
func (g *guard) lost() bool {
	return g.lk != nil && errors.Is(context.Cause(g.lk.Context()), lockx.ErrLost)
}

func (g *guard) release() {
	if g.lk != nil {
		g.lk.Release()
	}
}
