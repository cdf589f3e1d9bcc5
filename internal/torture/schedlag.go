package torture

import (
	"context"
	"sync"
	"time"
)

// lagTick is how often lagMonitor wakes up.
const lagTick = 5 * time.Millisecond

// lagMonitor is the control of the checks that bound a delay: it measures
// how late this process's goroutines get to run, by sleeping lagTick at a
// time and recording every wake-up that came later than it should. A loss
// signal late by no more than the process's own lag at that moment says
// nothing about the lock: a process starved of CPU is a paused process, the
// case fencing is for.
type lagMonitor struct {
	mu   sync.Mutex
	late []lagSample // wake-ups more than lagTick late
}

type lagSample struct {
	at   time.Time // when the goroutine woke up
	late time.Duration
}

// run samples until ctx ends.
func (m *lagMonitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		want := time.Now().Add(lagTick)
		time.Sleep(lagTick)
		if late := time.Since(want); late > lagTick {
			m.mu.Lock()
			m.late = append(m.late, lagSample{at: time.Now(), late: late})
			m.mu.Unlock()
		}
	}
}

// max returns the largest lag of a stall that overlaps from..to. A sample
// stands for a stall from at-late to at: the monitor may wake after the
// goroutine whose signal the stall delayed, so a stall is matched by when it
// happened, not by when the monitor noticed it.
func (m *lagMonitor) max(from, to time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out time.Duration
	for _, s := range m.late {
		if !s.at.Before(from) && !s.at.Add(-s.late).After(to) {
			out = max(out, s.late)
		}
	}
	return out
}

// worst returns the largest lag seen.
func (m *lagMonitor) worst() time.Duration { return m.max(time.Time{}, time.Now().Add(time.Hour)) }
