package torture

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestCheckCacheFindsTheWriteAScanFinds: checkCache's index finds, for every
// read, the write a scan of all the key's writes finds (the earliest-ended
// newer write that had returned before the read began), on random
// histories in which concurrent writers return out of version order.
func TestCheckCacheFindsTheWriteAScanFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(0, 0)
	at := func() time.Time { return t0.Add(time.Duration(r.IntN(1000)) * time.Millisecond) }
	for range 200 {
		var ops []cacheOp
		version := map[int]int64{}
		for range 1 + r.IntN(60) {
			key := r.IntN(3)
			version[key]++
			ops = append(ops, cacheOp{key: key, write: true, version: version[key], end: at()})
		}
		for range 200 {
			key := r.IntN(3)
			ops = append(ops, cacheOp{key: key, inst: r.IntN(2), version: r.Int64N(version[key] + 1), start: at()})
		}
		writes := writesByKey(ops)
		for _, op := range ops {
			if op.write {
				continue
			}
			got, want := indexWrites(writes[op.key]).firstNewer(op.version, op.start), scanNewer(writes[op.key], op)
			if (got == nil) != (want == nil) || got != nil && !got.end.Equal(want.end) {
				t.Fatalf("read %+v: index found %+v, the scan %+v", op, got, want)
			}
		}
		bad, stale := checkCache(ops, 300*time.Millisecond)
		wantBad, wantStale := scanCheck(ops, 300*time.Millisecond)
		if len(bad) != wantBad || !slices.Equal(stale, wantStale) {
			t.Fatalf("checkCache: %d anomalies, staleness %v; the scan: %d, %v", len(bad), stale, wantBad, wantStale)
		}
	}
}

// scanNewer is the check's definition, written as a scan.
func scanNewer(writes []cacheOp, read cacheOp) *cacheOp {
	var first *cacheOp
	for i, w := range writes {
		if w.end.Before(read.start) && w.version > read.version && (first == nil || w.end.Before(first.end)) {
			first = &writes[i]
		}
	}
	return first
}

// scanCheck counts checkCache's anomalies and lists its staleness by scans.
func scanCheck(ops []cacheOp, bound time.Duration) (anomalies int, staleness []time.Duration) {
	writes := writesByKey(ops)
	for _, op := range ops {
		if op.write {
			continue
		}
		switch first := scanNewer(writes[op.key], op); {
		case first == nil:
		case op.inst != 0 && op.start.Sub(first.end) <= bound:
			staleness = append(staleness, op.start.Sub(first.end))
		default:
			anomalies++
		}
	}
	return anomalies, staleness
}

// TestHistoryKeepsEveryEntryInOrder: entries added from many goroutines,
// over several chunks, all come back, each goroutine's in its order.
func TestHistoryKeepsEveryEntryInOrder(t *testing.T) {
	const goroutines, each = 4, historyChunk
	var (
		h  history[[2]int]
		wg sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				h.add([2]int{g, i})
			}
		})
	}
	wg.Wait()
	all := h.all()
	if len(all) != goroutines*each {
		t.Fatalf("%d entries, want %d", len(all), goroutines*each)
	}
	next := make([]int, goroutines)
	for _, e := range all {
		if e[1] != next[e[0]] {
			t.Fatalf("goroutine %d: entry %d after %d", e[0], e[1], next[e[0]]-1)
		}
		next[e[0]]++
	}
}
