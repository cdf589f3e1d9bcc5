package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Clock is the runner's source of time. Tests inject a virtual clock; the
// program uses RealClock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// SleepUntil blocks until the clock reaches t (returning at once when t
	// is not in the future) or until ctx ends, in which case it returns
	// ctx.Err().
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is the wall clock (with Go's monotonic reading, so schedules are
// immune to wall-clock steps).
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil waits on a timer until t or until ctx ends.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Request is one scheduled arrival handed to Runner.Do.
type Request struct {
	// Seq numbers arrivals from 0 in schedule order, dropped ones included.
	Seq int64
	// Scheduled is when the request was due to start. Latency is measured
	// from here, not from when it actually started.
	Scheduled time.Time
}

// Outcome is what Runner.Do reports about one request.
type Outcome struct {
	// Endpoint is a low-cardinality name of what was called ("product",
	// "category_stats"), used as a metric label.
	Endpoint string
	// Code is the HTTP status code as a string, or a short transport error
	// class ("error", "timeout").
	Code string
	// Err is non-nil when the request counts as failed.
	Err error
	// Class optionally refines Code for reports ("fenced" or
	// "insufficient" for a 409); the report's per-second counts use it
	// when set. It is not a metric label.
	Class string
	// TraceID and SpanID are the W3C trace context the request carried in
	// its traceparent header, and Sampled its sampled flag: the API records
	// the trace of a sampled request, whose server span is a child of
	// SpanID. Both ids are zero (invalid) when no request was sent.
	TraceID trace.TraceID
	SpanID  trace.SpanID
	Sampled bool
}

// Result is one finished or dropped arrival, passed to Runner.OnResult.
type Result struct {
	Request
	Outcome
	// Dropped is true when the arrival was not started because MaxInFlight
	// requests were already in flight; the time fields other than Scheduled
	// are then zero.
	Dropped bool
	// Started is when Do was called (never before Scheduled).
	Started time.Time
	// Done is when Do returned.
	Done time.Time
	// Latency is Done - Scheduled: the time a user arriving on schedule
	// waited, including any delay in starting (no coordinated omission).
	Latency time.Duration
}

// Summary counts what one Run did. Scheduled == Started + Dropped and, after
// Run returns, Completed == Started.
type Summary struct {
	Scheduled int64 // arrivals whose time came
	Started   int64 // arrivals handed to Do
	Dropped   int64 // arrivals skipped because MaxInFlight were in flight
	Completed int64 // calls to Do that returned
	Failed    int64 // completed calls whose Outcome.Err was non-nil
	Start     time.Time
	End       time.Time // when the last request finished
}

// Runner is an open-model load generator: arrival k is due at
// Start + k/Rate seconds and is started at that time in its own goroutine,
// whether or not earlier requests have finished. If the runner wakes late,
// every arrival that has come due is started at once, each keeping its
// scheduled time. MaxInFlight is a safety bound, not back-pressure: an
// arrival that finds MaxInFlight requests in flight is not started and is
// counted as dropped; the schedule does not shift.
//
// A Runner is configured through its fields and then used for one Run at a
// time.
type Runner struct {
	// Rate is the target arrival rate in requests per second (> 0).
	Rate float64
	// Duration bounds the schedule: arrivals are due in [start, start+Duration).
	// Zero means no time bound.
	Duration time.Duration
	// MaxRequests bounds the number of arrivals (started + dropped).
	// Zero means no count bound. At least one of Duration and MaxRequests
	// must be set, so a Run always stops by itself, unless UntilCanceled.
	MaxRequests int64
	// UntilCanceled lets a Run without Duration and MaxRequests go on
	// until its context ends (the demo's endless load).
	UntilCanceled bool
	// MaxInFlight caps concurrently running requests (> 0).
	MaxInFlight int
	// Clock is the time source; nil means RealClock.
	Clock Clock
	// Do performs one request. It is called concurrently and must honour ctx.
	Do func(ctx context.Context, r Request) Outcome
	// OnResult, if set, is called once per arrival (finished or dropped),
	// concurrently from request goroutines, before Run returns.
	OnResult func(Result)
}

// The rates a Runner accepts: at least one arrival a day, at most a million a
// second (beyond that arrival times are below a microsecond apart, and a
// rate's schedule would overflow time.Duration or never end).
const (
	MinRate = 1.0 / 86400
	MaxRate = 1e6
)

// ErrUnbounded is returned by Run when neither Duration nor MaxRequests is set.
var ErrUnbounded = errors.New("loadgen: runner needs a duration or a request limit")

// validate reports the first field that would make Run misbehave or never stop.
func (r *Runner) validate() error {
	switch {
	case !(r.Rate >= MinRate && r.Rate <= MaxRate):
		return fmt.Errorf("loadgen: rate must be in [%g, %g] per second, got %v", MinRate, MaxRate, r.Rate)
	case r.Duration < 0:
		return fmt.Errorf("loadgen: duration must be >= 0, got %v", r.Duration)
	case r.MaxRequests < 0:
		return fmt.Errorf("loadgen: max requests must be >= 0, got %d", r.MaxRequests)
	case r.Duration == 0 && r.MaxRequests == 0 && !r.UntilCanceled:
		return ErrUnbounded
	case r.MaxInFlight <= 0:
		return fmt.Errorf("loadgen: max in flight must be > 0, got %d", r.MaxInFlight)
	case r.Do == nil:
		return errors.New("loadgen: runner has no Do function")
	}
	return nil
}

// offset returns when arrival k is due relative to the start. It is computed
// from k directly, so rounding never accumulates over a long run.
func (r *Runner) offset(k int64) time.Duration {
	return time.Duration(float64(k) * float64(time.Second) / r.Rate)
}

// Run drives the schedule until it is exhausted (Duration or MaxRequests) or
// ctx ends, then waits for every started request to finish and returns the
// counts. Requests receive ctx, so cancelling it also ends requests in
// flight. The error is ctx.Err() when the context ended the run early, a
// configuration error, or nil.
func (r *Runner) Run(ctx context.Context) (Summary, error) {
	if err := r.validate(); err != nil {
		return Summary{}, err
	}
	clock := r.Clock
	if clock == nil {
		clock = RealClock{}
	}

	var (
		sum       Summary
		inFlight  atomic.Int64
		completed atomic.Int64
		failed    atomic.Int64
		wg        sync.WaitGroup
		runErr    error
	)
	sum.Start = clock.Now()
	end := sum.Start.Add(r.Duration)

	for k := int64(0); r.MaxRequests == 0 || k < r.MaxRequests; k++ {
		due := sum.Start.Add(r.offset(k))
		if r.Duration > 0 && !due.Before(end) {
			break
		}
		if err := clock.SleepUntil(ctx, due); err != nil {
			runErr = err
			break
		}
		if err := ctx.Err(); err != nil {
			runErr = err
			break
		}
		sum.Scheduled++
		req := Request{Seq: k, Scheduled: due}
		if inFlight.Load() >= int64(r.MaxInFlight) {
			sum.Dropped++
			if r.OnResult != nil {
				r.OnResult(Result{Request: req, Dropped: true})
			}
			continue
		}
		sum.Started++
		inFlight.Add(1)
		wg.Go(func() {
			started := clock.Now()
			out := r.Do(ctx, req)
			done := clock.Now()
			completed.Add(1)
			if out.Err != nil {
				failed.Add(1)
			}
			if r.OnResult != nil {
				r.OnResult(Result{
					Request: req, Outcome: out,
					Started: started, Done: done, Latency: done.Sub(req.Scheduled),
				})
			}
			inFlight.Add(-1)
		})
	}
	wg.Wait()
	sum.Completed = completed.Load()
	sum.Failed = failed.Load()
	sum.End = clock.Now()
	return sum, runErr
}
