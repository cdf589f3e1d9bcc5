package torture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// checkCache checks every read against the writes whose invalidation had
// returned before the read began.
func checkCache(ops []cacheOp, bound time.Duration) (out []Anomaly, staleness []time.Duration) {
	writes := map[int]keyWrites{}
	for key, ws := range writesByKey(ops) {
		writes[key] = indexWrites(ws)
	}
	for _, op := range ops {
		if op.write {
			continue
		}
		if op.err != nil {
			if !errors.Is(op.err, context.Canceled) && !errors.Is(op.err, context.DeadlineExceeded) {
				out = append(out, Anomaly{Check: "no Redis fault surfaces as a read error",
					Detail: fmt.Sprintf("key %d: read failed: %v", op.key, op.err)})
			}
			continue
		}
		first := writes[op.key].firstNewer(op.version, op.start)
		switch {
		case first == nil:
		case bound > 0 && op.inst != 0 && op.start.Sub(first.end) <= bound:
			staleness = append(staleness, op.start.Sub(first.end))
		case bound > 0 && op.inst != 0:
			out = append(out, Anomaly{Check: checkBoundedName,
				Detail: fmt.Sprintf("key %d: a read through the other instance begun at %s returned version %d; version %d was written and invalidated %v before, more than %v",
					op.key, op.start.Format(time.StampMicro), op.version, first.version, op.start.Sub(first.end).Round(time.Microsecond), bound)})
		default:
			out = append(out, Anomaly{Check: "no stale read after an invalidation",
				Detail: fmt.Sprintf("key %d: a read begun at %s returned version %d; version %d was written and invalidated by %s",
					op.key, op.start.Format(time.StampMicro), op.version, first.version, first.end.Format(time.StampMicro))})
		}
	}
	return out, staleness
}

// writesByKey returns the recorded writes of each key.
func writesByKey(ops []cacheOp) map[int][]cacheOp {
	writes := map[int][]cacheOp{}
	for _, op := range ops {
		if op.write {
			writes[op.key] = append(writes[op.key], op)
		}
	}
	return writes
}

// keyWrites holds one key's writes by version, with, for each position, the
// write that ended first from there on, so that a read is checked in
// O(log writes): a 30-minute run records millions of reads and thousands
// of writes per key.
type keyWrites struct {
	byVersion []cacheOp
	firstEnd  []int // firstEnd[i]: the index of the earliest end in byVersion[i:]
}

// indexWrites indexes one key's writes; ws is not changed.
func indexWrites(ws []cacheOp) keyWrites {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b cacheOp) int { return cmp.Compare(a.version, b.version) })
	first := make([]int, len(ws))
	for i := len(ws) - 1; i >= 0; i-- {
		first[i] = i
		if i+1 < len(ws) && ws[first[i+1]].end.Before(ws[i].end) {
			first[i] = first[i+1]
		}
	}
	return keyWrites{byVersion: ws, firstEnd: first}
}

// firstNewer returns the write newer than version whose invalidation
// returned first, if that was before t; nil if no newer write had returned
// by t. The earliest-ended newer write ended before t exactly when any did.
func (k keyWrites) firstNewer(version int64, t time.Time) *cacheOp {
	i, _ := slices.BinarySearchFunc(k.byVersion, version+1, func(w cacheOp, v int64) int { return cmp.Compare(w.version, v) })
	if i == len(k.byVersion) {
		return nil
	}
	if w := &k.byVersion[k.firstEnd[i]]; w.end.Before(t) {
		return w
	}
	return nil
}

// checkBoundedName is the near-cache variant's check.
const checkBoundedName = "bounded staleness across instances"

// nearCheckBound is how stale the near-cache variant lets a read through the
// other instance be: the near cache's MaxStaleness, plus cacheTimeout for a
// reply that was on its way when the write happened (go-redis counts an
// entry's age from when it was stored). Zero without a near cache.
func nearCheckBound(maxStaleness time.Duration) time.Duration {
	if maxStaleness <= 0 {
		return 0
	}
	return maxStaleness + cacheTimeout
}

// quantile returns the q-quantile of ds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// recomputeWindows is what checkRecomputes checked: the TTL windows with
// no fault (quiet) and those it skipped because this process stalled or a
// Redis call failed.
type recomputeWindows struct {
	quiet, stalled int
	anomalies      []Anomaly
}

// checkRecomputes checks that, in every TTL window with no fault on or just
// over, each key was loaded at most twice plus twice for each invalidation of
// it in the window (one for the invalidation, one for a read that raced it),
// across both instances: the cache's lease lets one load run for all. A
// window in which the process stalled for half of cacheTimeout or more, or
// in which a cache counted a failed Redis call (failed), is skipped: its
// reads could bypass Redis and load, as they should.
func checkRecomputes(ops, loads []cacheOp, faults []FaultRecord, start, end time.Time, ttl time.Duration, lag *lagMonitor, failed *redisErrors) (w recomputeWindows) {
	for from := start; from.Add(ttl).Before(end); from = from.Add(ttl) {
		to := from.Add(ttl)
		quiet := true
		for _, f := range faults {
			if !f.Began.IsZero() && f.Began.Before(to) && f.Ended.Add(2*time.Second).After(from) {
				quiet = false
			}
		}
		if !quiet {
			continue
		}
		if lag.max(from, to) >= cacheTimeout/2 || failed.during(from, to) {
			w.stalled++
			continue
		}
		w.quiet++
		loaded, invalidated := map[int]int{}, map[int]int{}
		for _, l := range loads {
			if !l.start.Before(from) && l.start.Before(to) {
				loaded[l.key]++
			}
		}
		for _, op := range ops {
			if op.write && !op.end.Before(from) && op.end.Before(to) {
				invalidated[op.key]++
			}
		}
		for key, n := range loaded {
			if limit := 2 + 2*invalidated[key]; n > limit {
				w.anomalies = append(w.anomalies, Anomaly{Check: "about one recompute per key per TTL while healthy",
					Detail: fmt.Sprintf("key %d: %d loads from %v to %v after the start, %d invalidations: more than %d",
						key, n, from.Sub(start).Round(time.Millisecond), to.Sub(start).Round(time.Millisecond), invalidated[key], limit)})
			}
		}
	}
	return w
}
