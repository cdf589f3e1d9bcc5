package scenario

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine is what loadgen read of the machine it ran on, without being
// asked (-conditions is a label a person writes; this is measured): its
// CPUs, loadgen's GOMAXPROCS, and the load average at the run's start and
// end. Every summary records it, and the report's introduction repeats it,
// so a reader can place a run's figures: a stampede measured at load
// average 3.5 on 2 CPUs is a different experiment from one at 0.3.
type Machine struct {
	CPUs       int `json:"cpus"`       // runtime.NumCPU: the CPUs loadgen may run on
	GOMAXPROCS int `json:"gomaxprocs"` // loadgen's own
	// LoadAvgStart and LoadAvgEnd are /proc/loadavg's 1, 5 and 15 minute
	// averages when the run started and when it finished (after its last
	// phase, before the report); nil where the system has no /proc/loadavg.
	LoadAvgStart *LoadAvg `json:"load_avg_start,omitempty"`
	LoadAvgEnd   *LoadAvg `json:"load_avg_end,omitempty"`
}

// LoadAvg is one reading of the load average: the run-queue length (runnable
// and uninterruptible tasks) averaged over 1, 5 and 15 minutes. loadgen's
// own work and the API's count in it: the end reading includes the run.
type LoadAvg struct {
	One     float64 `json:"1m"`
	Five    float64 `json:"5m"`
	Fifteen float64 `json:"15m"`
}

// loadAvgPath is where the load average is read; a test points it elsewhere.
var loadAvgPath = "/proc/loadavg"

// readLoadAvg reads the load average at loadAvgPath; nil when it cannot.
func readLoadAvg() *LoadAvg {
	b, err := os.ReadFile(loadAvgPath)
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	var v [3]float64
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return nil
		}
	}
	return &LoadAvg{One: v[0], Five: v[1], Fifteen: v[2]}
}

// startMachine reads the machine at a run's start.
func startMachine() *Machine {
	return &Machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAvgStart: readLoadAvg()}
}

// end reads the load average at a run's end; m may be nil.
func (m *Machine) end() {
	if m != nil {
		m.LoadAvgEnd = readLoadAvg()
	}
}

// String is the machine as a report's introduction says it, e.g. "2 CPUs,
// GOMAXPROCS 2; load average (1, 5, 15 min) 0.41, 0.60, 0.72 at the start,
// 1.83, 0.98, 0.83 at the end".
func (m *Machine) String() string {
	if m == nil {
		return ""
	}
	s := fmt.Sprintf("%d CPUs, GOMAXPROCS %d", m.CPUs, m.GOMAXPROCS)
	var la []string
	for _, r := range []struct {
		l    *LoadAvg
		when string
	}{{m.LoadAvgStart, "at the start"}, {m.LoadAvgEnd, "at the end"}} {
		if r.l != nil {
			la = append(la, fmt.Sprintf("%s, %s, %s %s", f2(r.l.One), f2(r.l.Five), f2(r.l.Fifteen), r.when))
		}
	}
	if len(la) > 0 {
		s += "; load average (1, 5, 15 min) " + strings.Join(la, ", ")
	}
	return s
}
