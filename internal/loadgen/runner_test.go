package loadgen

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// runVirtual runs r on a fresh virtual clock inside a synctest bubble and
// returns the summary, the error and every result by Seq.
func runVirtual(t *testing.T, ctx context.Context, r *Runner, clk *fakeClock, beforeDrive func()) (Summary, error, map[int64]Result) {
	t.Helper()
	var (
		mu      sync.Mutex
		results = map[int64]Result{}
		sum     Summary
		err     error
	)
	r.Clock = clk
	r.OnResult = func(res Result) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := results[res.Seq]; dup {
			t.Errorf("seq %d reported twice", res.Seq)
		}
		results[res.Seq] = res
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sum, err = r.Run(ctx)
	}()
	if beforeDrive != nil {
		beforeDrive()
	}
	clk.drive(t, done)
	return sum, err, results
}

func TestRunnerOpenModelStartsOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		var inFlight, maxInFlight int
		var mu sync.Mutex
		r := &Runner{
			Rate: 100, Duration: time.Second, MaxInFlight: 1000,
			Do: func(ctx context.Context, req Request) Outcome {
				mu.Lock()
				inFlight++
				maxInFlight = max(maxInFlight, inFlight)
				mu.Unlock()
				err := clk.sleep(ctx, 50*time.Millisecond)
				mu.Lock()
				inFlight--
				mu.Unlock()
				return Outcome{Endpoint: "x", Code: "200", Err: err}
			},
		}
		sum, err, res := runVirtual(t, t.Context(), r, clk, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := Summary{Scheduled: 100, Started: 100, Completed: 100, Start: epoch, End: epoch.Add(990*time.Millisecond + 50*time.Millisecond)}
		if sum != want {
			t.Fatalf("summary = %+v, want %+v", sum, want)
		}
		for k := int64(0); k < 100; k++ {
			got := res[k]
			at := epoch.Add(time.Duration(k) * 10 * time.Millisecond)
			if !got.Scheduled.Equal(at) || !got.Started.Equal(at) {
				t.Errorf("seq %d scheduled %v started %v, want both %v", k, got.Scheduled.Sub(epoch), got.Started.Sub(epoch), at.Sub(epoch))
			}
			if got.Latency != 50*time.Millisecond {
				t.Errorf("seq %d latency %v, want 50ms", k, got.Latency)
			}
		}
		// 50ms requests every 10ms: five overlap, none waits for another.
		if maxInFlight != 5 {
			t.Errorf("max in flight = %d, want 5", maxInFlight)
		}
	})
}

func TestRunnerDropsAtInFlightCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		r := &Runner{
			Rate: 100, Duration: time.Second, MaxInFlight: 1,
			Do: func(ctx context.Context, req Request) Outcome {
				return Outcome{Code: "200", Err: clk.sleep(ctx, 30*time.Millisecond)}
			},
		}
		stats := NewStats(clk)
		sum, err, res := runVirtual(t, t.Context(), r, clk, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, x := range res {
			stats.ObserveResult("s", x)
		}
		// Arrivals at 0,10,20,...,990ms; each request holds the only slot for
		// 30ms (it finishes just before the arrival at +30ms), so every third
		// arrival starts and the two in between are dropped.
		if sum.Scheduled != 100 || sum.Started != 34 || sum.Dropped != 66 || sum.Completed != 34 {
			t.Fatalf("summary = %+v, want scheduled 100, started 34, dropped 66", sum)
		}
		for k := int64(0); k < 100; k++ {
			if got, want := res[k].Dropped, k%3 != 0; got != want {
				t.Errorf("seq %d dropped = %v, want %v", k, got, want)
			}
		}
		if got := stats.Dropped("s"); got != 66 {
			t.Errorf("stats dropped = %d, want 66", got)
		}
		if snap := stats.Snapshot(); snap.Requests != 34 || snap.Dropped != 66 {
			t.Errorf("snapshot = %+v", snap)
		}
	})
}

func TestRunnerLateStartMeasuredFromSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		r := &Runner{
			Rate: 100, MaxRequests: 3, MaxInFlight: 10,
			Do: func(ctx context.Context, req Request) Outcome {
				return Outcome{Code: "200", Err: clk.sleep(ctx, 30*time.Millisecond)}
			},
		}
		sum, err, res := runVirtual(t, t.Context(), r, clk, func() {
			// Request 0 is running; the runner waits for the arrival at 10ms.
			// Wake it 15ms late, at 25ms, when arrivals 1 and 2 are both due.
			synctest.Wait()
			clk.advanceTo(epoch.Add(25 * time.Millisecond))
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if sum.Started != 3 || sum.Dropped != 0 {
			t.Fatalf("summary = %+v", sum)
		}
		ms := time.Millisecond
		for k, want := range []struct{ sched, started, latency time.Duration }{
			{0, 0, 30 * ms},
			{10 * ms, 25 * ms, 45 * ms}, // started 15ms late: latency includes the delay
			{20 * ms, 25 * ms, 35 * ms},
		} {
			got := res[int64(k)]
			if got.Scheduled.Sub(epoch) != want.sched || got.Started.Sub(epoch) != want.started || got.Latency != want.latency {
				t.Errorf("seq %d: scheduled %v started %v latency %v, want %v %v %v", k,
					got.Scheduled.Sub(epoch), got.Started.Sub(epoch), got.Latency, want.sched, want.started, want.latency)
			}
		}
	})
}

func TestRunnerStopsAtMaxRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		r := &Runner{
			Rate: 1000, MaxRequests: 7, MaxInFlight: 100,
			Do: func(ctx context.Context, req Request) Outcome {
				return Outcome{Err: clk.sleep(ctx, time.Millisecond)}
			},
		}
		sum, err, res := runVirtual(t, t.Context(), r, clk, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if sum.Scheduled != 7 || sum.Completed != 7 || len(res) != 7 {
			t.Fatalf("summary = %+v, %d results; want 7", sum, len(res))
		}
		if got := sum.End.Sub(sum.Start); got != 7*time.Millisecond {
			t.Errorf("run took %v of virtual time, want 7ms", got)
		}
	})
}

func TestRunnerStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := newFakeClock()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r := &Runner{
			Rate: 100, Duration: time.Hour, MaxInFlight: 100,
			Do: func(ctx context.Context, req Request) Outcome {
				return Outcome{Err: clk.sleep(ctx, 50*time.Millisecond)}
			},
		}
		sum, err, res := runVirtual(t, ctx, r, clk, func() {
			go func() {
				if clk.SleepUntil(ctx, epoch.Add(100*time.Millisecond)) == nil {
					cancel()
				}
			}()
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error = %v, want context.Canceled", err)
		}
		// Arrivals 0..90ms were scheduled; cancel at 100ms stops the schedule
		// and ends the requests still in flight.
		if sum.Scheduled != 10 || sum.Completed != sum.Started || int64(len(res)) != sum.Scheduled {
			t.Fatalf("summary = %+v, %d results", sum, len(res))
		}
		if sum.Failed == 0 {
			t.Errorf("no request saw the cancellation: %+v", sum)
		}
		if got := sum.End.Sub(sum.Start); got != 100*time.Millisecond {
			t.Errorf("run ended after %v of virtual time, want 100ms", got)
		}
	})
}

func TestRunnerRejectsBadConfig(t *testing.T) {
	do := func(context.Context, Request) Outcome { return Outcome{} }
	for name, r := range map[string]*Runner{
		"unbounded": {Rate: 1, MaxInFlight: 1, Do: do},
		"zero rate": {Duration: time.Second, MaxInFlight: 1, Do: do},
		"inf rate":  {Rate: math.Inf(1), Duration: time.Second, MaxInFlight: 1, Do: do},
		"tiny rate": {Rate: 1e-12, Duration: time.Second, MaxInFlight: 1, Do: do},
		"huge rate": {Rate: 1e300, Duration: time.Second, MaxInFlight: 1, Do: do},
		"no cap":    {Rate: 1, Duration: time.Second, Do: do},
		"no do":     {Rate: 1, Duration: time.Second, MaxInFlight: 1},
	} {
		if _, err := r.Run(t.Context()); err == nil {
			t.Errorf("%s: Run accepted %+v", name, r)
		}
	}
	if _, err := (&Runner{Rate: 1, MaxInFlight: 1, Do: do}).Run(t.Context()); !errors.Is(err, ErrUnbounded) {
		t.Errorf("unbounded: err = %v, want ErrUnbounded", err)
	}
}

func TestRealClockSleepUntil(t *testing.T) {
	var c RealClock
	start := c.Now()
	if err := c.SleepUntil(t.Context(), start.Add(2*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2*time.Millisecond {
		t.Errorf("woke after %v, want >= 2ms", d)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.SleepUntil(ctx, start.Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sleep returned %v", err)
	}
}
