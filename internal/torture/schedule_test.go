package torture

import (
	"reflect"
	"testing"
	"time"
)

// TestScheduleIsSeededAndWellFormed: one seed, one schedule; another seed,
// another; no server has two faults at once; the last 2 s are quiet; every
// kind turns up in a long schedule.
func TestScheduleIsSeededAndWellFormed(t *testing.T) {
	const d = 10 * time.Minute
	a, b := NewSchedule(7, d, 3, nil), NewSchedule(7, d, 3, nil)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	if reflect.DeepEqual(a, NewSchedule(8, d, 3, nil)) {
		t.Fatal("two seeds gave one schedule")
	}
	busy := map[int]time.Duration{}
	kinds := map[Kind]bool{}
	for _, f := range a {
		kinds[f.Kind] = true
		if f.At+f.For > d-2*time.Second {
			t.Errorf("%v runs into the last 2 s", f)
		}
		if f.Kind == FaultClientPause {
			continue
		}
		if busy[f.Node] > f.At {
			t.Errorf("%v overlaps the fault before it on its server", f)
		}
		busy[f.Node] = f.At + f.For
	}
	if len(kinds) != len(Kinds()) {
		t.Errorf("kinds drawn: %v, want all of %v", kinds, Kinds())
	}
}

// TestProgressIsCheckedWhileTheLoadRuns: seconds after the load stopped are
// not counted against it; a healthy second without an acquisition is.
func TestProgressIsCheckedWhileTheLoadRuns(t *testing.T) {
	start := time.Now()
	var acqs []*acquisition
	for s := range 5 {
		acqs = append(acqs, &acquisition{acquired: start.Add(time.Duration(s)*time.Second + 100*time.Millisecond)})
	}
	quiet := &lagMonitor{}
	if a := checkProgress(acqs, nil, start, start.Add(5*time.Second), quiet); len(a) != 0 {
		t.Errorf("a load with an acquisition every second: %v", a)
	}
	if a := checkProgress(acqs[:3], nil, start, start.Add(5*time.Second), quiet); len(a) != 1 {
		t.Errorf("two silent healthy seconds gave %d anomalies, want 1 (the last second is not checked)", len(a))
	}
	// A second in which the process itself was starved is not counted.
	starved := &lagMonitor{late: []lagSample{{at: start.Add(3500 * time.Millisecond), late: 400 * time.Millisecond}}}
	if a := checkProgress(acqs[:3], nil, start, start.Add(5*time.Second), starved); len(a) != 0 {
		t.Errorf("a silent second while the process was starved gave %v", a)
	}
}

// TestLossTimingAllowsTheProcesssOwnLag: a loss signalled 300 ms after the
// lock could expire is an anomaly, unless the process's goroutines were
// running that late themselves (the control).
func TestLossTimingAllowsTheProcesssOwnLag(t *testing.T) {
	start := time.Now()
	ttl := time.Second
	acqs := []*acquisition{{holder: "h", acquired: start, lostAt: start.Add(ttl + 300*time.Millisecond)}}
	if a := checkLossTiming(acqs, ttl, &lagMonitor{}); len(a) != 1 {
		t.Errorf("a late signal on a process with no lag: %v, want one anomaly", a)
	}
	starved := &lagMonitor{late: []lagSample{{at: start.Add(ttl + 290*time.Millisecond), late: 280 * time.Millisecond}}}
	if a := checkLossTiming(acqs, ttl, starved); len(a) != 0 {
		t.Errorf("a signal late by the process's own lag: %v", a)
	}
	// The monitor noticed the same stall after the signal: it still counts
	// (a 30-minute run at a load of 43 flagged two losses signalled 217 ms
	// late at the same microsecond, each after one stall of the process).
	after := &lagMonitor{late: []lagSample{{at: start.Add(ttl + 330*time.Millisecond), late: 320 * time.Millisecond}}}
	if a := checkLossTiming(acqs, ttl, after); len(a) != 0 {
		t.Errorf("a signal late by a stall the monitor noticed afterwards: %v", a)
	}
	// A stall that ended before the lock could expire excuses nothing.
	before := &lagMonitor{late: []lagSample{{at: start.Add(ttl - 200*time.Millisecond), late: 400 * time.Millisecond}}}
	if a := checkLossTiming(acqs, ttl, before); len(a) != 1 {
		t.Errorf("a stall over before the expiry: %v, want one anomaly", a)
	}
}

// TestRecomputesAreNotCountedWhereTheProcessStalled: twenty loads of a key
// in one TTL window are an anomaly, unless the process stalled in that
// window long enough for its Redis calls to time out, or a cache counted a
// failed Redis call there (each read then bypassed and loaded, as it
// should).
func TestRecomputesAreNotCountedWhereTheProcessStalled(t *testing.T) {
	start, ttl := time.Now(), time.Second
	var loads []cacheOp
	for i := range 20 {
		loads = append(loads, cacheOp{key: 1, start: start.Add(ttl + time.Duration(i)*10*time.Millisecond)})
	}
	end := start.Add(3 * ttl)
	w := checkRecomputes(nil, loads, nil, start, end, ttl, &lagMonitor{}, nil)
	if len(w.anomalies) != 1 || w.quiet != 2 || w.stalled != 0 {
		t.Errorf("twenty loads in a window with no stall: %+v, want one anomaly in 2 quiet windows", w)
	}
	starved := &lagMonitor{late: []lagSample{{at: start.Add(ttl + 300*time.Millisecond), late: cacheTimeout}}}
	w = checkRecomputes(nil, loads, nil, start, end, ttl, starved, nil)
	if len(w.anomalies) != 0 || w.quiet != 1 || w.stalled != 1 {
		t.Errorf("the same loads in a window where the process stalled for %v: %+v, want it skipped", cacheTimeout, w)
	}
	failed := &redisErrors{seen: []time.Time{start.Add(ttl + 500*time.Millisecond)}}
	w = checkRecomputes(nil, loads, nil, start, end, ttl, &lagMonitor{}, failed)
	if len(w.anomalies) != 0 || w.quiet != 1 || w.stalled != 1 {
		t.Errorf("the same loads in a window where a cache counted a failed Redis call: %+v, want it skipped", w)
	}
	short := &lagMonitor{late: []lagSample{{at: start.Add(ttl + 300*time.Millisecond), late: cacheTimeout / 5}}}
	if w = checkRecomputes(nil, loads, nil, start, end, ttl, short, nil); len(w.anomalies) != 1 {
		t.Errorf("a stall too short for a timeout excused %+v", w)
	}
}
