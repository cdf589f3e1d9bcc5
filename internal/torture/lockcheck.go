package torture

import (
	"fmt"
	"time"
)

// lossSlack is how late a loss signal may be observed after the latest
// moment the servers could expire the lock, beyond the process's own
// scheduling lag then (lagMonitor): the time for the watching goroutine to
// be scheduled on a machine that is not starving it.
const lossSlack = 50 * time.Millisecond

// checkRegister checks the accepted writes of each register in commit
// order: each must start from the value the one before it left (no write
// overlapped another and lost it), and tokens must increase from one holder
// to the next.
func checkRegister(ws []write) []Anomaly {
	var out []Anomaly
	last := map[int]write{}
	for _, w := range ws {
		p, seen := last[w.resource]
		last[w.resource] = w
		if !seen {
			if w.prev != 0 {
				out = append(out, Anomaly{Check: "no overlapping accepted writes",
					Detail: fmt.Sprintf("resource %d: the first write started from %d, not 0", w.resource, w.prev)})
			}
			continue
		}
		switch {
		case w.prev != p.next:
			out = append(out, Anomaly{Check: "no overlapping accepted writes",
				Detail:  fmt.Sprintf("resource %d: %s wrote %d→%d after %s had written %d→%d: the two held it at once", w.resource, w.holder, w.prev, w.next, p.holder, p.prev, p.next),
				Excerpt: []string{writeLine(p), writeLine(w)}})
		case w.token < p.token || (w.token == p.token && w.holder != p.holder):
			out = append(out, Anomaly{Check: "tokens increase",
				Detail:  fmt.Sprintf("resource %d: %s's token %d accepted after %s's %d", w.resource, w.holder, w.token, p.holder, p.token),
				Excerpt: []string{writeLine(p), writeLine(w)}})
		}
	}
	return out
}

func writeLine(w write) string {
	return fmt.Sprintf("write #%d resource %d by %s token %d: %d→%d", w.id, w.resource, w.holder, w.token, w.prev, w.next)
}

// checkLossTiming checks that every lost lock was signalled no later than
// the TTL after Acquire returned it. The servers set the key between the
// winning attempt's request and its reply, so they may expire it as early
// as the TTL after the request; the history does not have that moment, so
// this bound is looser by the attempt's round trip. It still catches a
// validity that is not counted from the acquisition (a loss timer that
// never fires, or one counted from a later event). A signal late by no more
// than the process's scheduling lag around it (lag, the control) is not
// held against the lock.
func checkLossTiming(acqs []*acquisition, ttl time.Duration, lag *lagMonitor) []Anomaly {
	var out []Anomaly
	for _, a := range acqs {
		if a.lostAt.IsZero() {
			continue
		}
		expiry := a.acquired.Add(ttl)
		if late := a.lostAt.Sub(expiry); late > lossSlack+lag.max(expiry.Add(-lossSlack), a.lostAt) {
			out = append(out, Anomaly{Check: "loss signalled in time",
				Detail: fmt.Sprintf("%s on resource %d: loss signalled %v after the lock could have expired on the servers", a.holder, a.resource, late.Round(time.Millisecond)),
				Excerpt: []string{fmt.Sprintf("acquire started %s, acquired %s, token %d, lost %s",
					a.start.Format(time.StampMicro), a.acquired.Format(time.StampMicro), a.token, a.lostAt.Format(time.StampMicro))}})
		}
	}
	return out
}

// checkProgress checks liveness: in every second from start to end (the
// end of the load, not of the last worker's wait) at least 2 s after the
// last fault ended and before the next began, and in which the process was
// not starved itself (lag, the control, under a quarter of a second), some
// acquisition succeeded.
func checkProgress(acqs []*acquisition, faults []FaultRecord, start, end time.Time, lag *lagMonitor) []Anomaly {
	var out []Anomaly
	healthy := func(from, to time.Time) bool {
		for _, f := range faults {
			if f.Began.IsZero() {
				continue
			}
			if f.Began.Before(to) && f.Ended.Add(2*time.Second).After(from) {
				return false
			}
		}
		return true
	}
	for s := start; s.Add(time.Second).Before(end); s = s.Add(time.Second) {
		e := s.Add(time.Second)
		if !healthy(s, e) || lag.max(s, e) > time.Second/4 {
			continue
		}
		ok := false
		for _, a := range acqs {
			if !a.acquired.IsZero() && !a.acquired.Before(s) && a.acquired.Before(e) {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, Anomaly{Check: "progress while healthy",
				Detail: fmt.Sprintf("no acquisition succeeded from %v to %v after the start, with no fault active", s.Sub(start).Round(time.Millisecond), e.Sub(start).Round(time.Millisecond))})
		}
	}
	return out
}
