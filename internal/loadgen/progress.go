package loadgen

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// IsTerminal reports whether w is a character device (a terminal), where
// the progress line is redrawn in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// StartProgress writes a progress line to w every interval until the
// returned function is called (idempotent; it waits for the writer to stop).
// On a terminal the line is redrawn in place and ended with a newline when
// stopped; otherwise each is a log line of its own.
func StartProgress(stats *Stats, w io.Writer, terminal bool, interval time.Duration) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		drawn := false
		for {
			select {
			case <-t.C:
				line := FormatProgress(stats.Snapshot())
				if terminal {
					fmt.Fprint(w, "\r\x1b[K"+line)
					drawn = true
				} else {
					fmt.Fprintln(w, "loadgen:", line)
				}
			case <-done:
				if drawn {
					fmt.Fprintln(w)
				}
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}
