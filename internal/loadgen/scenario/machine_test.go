package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMachineIsRecordedWithoutAFlag: a run's Load reads the CPUs,
// GOMAXPROCS and the load average at its start and end by itself, and the
// report's introduction says them after -conditions' label, if any.
func TestMachineIsRecordedWithoutAFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loadavg")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := loadAvgPath
	loadAvgPath = path
	t.Cleanup(func() { loadAvgPath = old })

	write("0.41 0.60 0.72 1/234 5678\n")
	e := &Env{cfg: &Config{}}
	l := newLoad("stampede", e)
	write("3.50 1.25 0.80 9/240 5690\n")
	l.finish()
	m := l.Machine
	if m == nil || m.CPUs != runtime.NumCPU() || m.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Fatalf("machine = %+v", m)
	}
	if *m.LoadAvgStart != (LoadAvg{0.41, 0.60, 0.72}) || *m.LoadAvgEnd != (LoadAvg{3.50, 1.25, 0.80}) {
		t.Errorf("load averages %+v then %+v", *m.LoadAvgStart, *m.LoadAvgEnd)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"load_avg_start":{"1m":0.41,"5m":0.6,"15m":0.72}`) {
		t.Errorf("summary JSON: %s", b)
	}

	intro := withConditions("Intro.", "busy: 2 CPU hogs", m)
	want := "Intro. Machine: busy: 2 CPU hogs. Measured by loadgen: " + m.String() + "."
	if intro != want {
		t.Errorf("intro %q, want %q", intro, want)
	}
	if s := m.String(); !strings.HasSuffix(s, "; load average (1, 5, 15 min) 0.41, 0.60, 0.72 at the start, 3.50, 1.25, 0.80 at the end") {
		t.Errorf("machine reads %q", s)
	}
	// A summary written before the machine was recorded renders as it did.
	if got := withConditions("Intro.", "", nil); got != "Intro." {
		t.Errorf("no conditions: %q", got)
	}
	// Without /proc/loadavg: the CPUs, and no load average.
	loadAvgPath = filepath.Join(t.TempDir(), "none")
	m = startMachine()
	m.end()
	if m.LoadAvgStart != nil || m.LoadAvgEnd != nil || strings.Contains(m.String(), "load average") {
		t.Errorf("without a load average: %+v, %q", m, m.String())
	}
}
