package catalog

import (
	"context"
	"fmt"
	"strings"
)

// Checker-only behaviour, kept out of the saga's flow: the flaws that put
// back an order of effects the saga removed, so that the checkers prove
// they catch it, and the hooks where tests force interleavings.

// Flaws are checker-only switches (cmd/api -flaws). Each restores a bug
// the saga fixed, so that a checker (the cut tests, cmd/torture) can show
// it finds it. The zero Flaws is the only value for production.
type Flaws struct {
	// GiveFirst: a cancel or an expiry has the warehouse take the units
	// back before the catalog ends the hold, so a cut between the two
	// leaves an active hold whose units are free to sell again.
	GiveFirst bool
	// AbandonUnlooked: a take refused by the fence, or never sent because
	// the lock's context ended, removes its intent and answers 409 fenced
	// without looking up whether an earlier attempt of the key took the
	// units: that attempt's units are orphaned and the answer is untrue.
	AbandonUnlooked bool
}

// Flaw names, as ParseFlaws reads them.
const (
	FlawGiveFirst       = "give-first"
	FlawAbandonUnlooked = "abandon-unlooked"
)

// ParseFlaws reads a comma-separated list of flaw names; "" is no flaw.
func ParseFlaws(s string) (Flaws, error) {
	var f Flaws
	for name := range strings.SplitSeq(s, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case FlawGiveFirst:
			f.GiveFirst = true
		case FlawAbandonUnlooked:
			f.AbandonUnlooked = true
		default:
			return Flaws{}, fmt.Errorf("catalog: unknown flaw %q (want %s or %s)", name, FlawGiveFirst, FlawAbandonUnlooked)
		}
	}
	return f, nil
}

// endGiveFirst is Flaws.GiveFirst's end of a hold.
func (s *Service) endGiveFirst(ctx context.Context, id int64, end endFunc) (Reservation, bool, error) {
	r, err := s.store.Reservation(ctx, id)
	if err != nil || r.Status != StatusActive {
		return r, false, err
	}
	g, err := s.guard(ctx, r.ProductID)
	if err != nil {
		return Reservation{}, false, err
	}
	defer g.release()
	if err := s.warehouse.Give(g.ctx, giveMove(r), g.fence); err != nil {
		return Reservation{}, false, err
	}
	r, ended, err := end(g.ctx, id)
	if err == nil && r.GiveDue {
		err = s.store.MarkGiven(g.ctx, r.ID)
	}
	return r, ended, err
}

// abandonUnlooked is Flaws.AbandonUnlooked's answer to a take refused with
// err: the intent goes, unless a newer attempt claimed it, whatever any
// earlier attempt took.
func (s *Service) abandonUnlooked(ctx context.Context, g *guard, req ReserveRequest, r Reservation, err error) (Reservation, bool, error) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	tag, aerr := s.store.db.Exec(actx, `DELETE FROM reservations WHERE id = $1 AND status = `+sqlPending+` AND fence_token <= $2`, r.ID, g.fence.Token)
	if aerr != nil || tag.RowsAffected() == 0 {
		return s.lookUpReserve(ctx, req, g.fence.Token, false, err)
	}
	return Reservation{}, false, refusal(g, err)
}

// hooks are where tests force interleavings: each, when set by a test
// before use, runs at its step of a reservation.
type hooks struct {
	// beforeTake runs after the claim, with the lock's context.
	beforeTake func(ctx context.Context, productID int64)
	// betweenReadAndWrite runs between the take's warehouse read and
	// write, with the write's context.
	betweenReadAndWrite func(ctx context.Context, productID int64)
	// beforeActivate runs after the take, before the intent is made active.
	beforeActivate func(ctx context.Context, productID int64)
}

// run runs hook, if a test set it.
func (hooks) run(hook func(context.Context, int64), ctx context.Context, productID int64) {
	if hook != nil {
		hook(ctx, productID)
	}
}
