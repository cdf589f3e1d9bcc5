package torture_test

import (
	"fmt"
	"time"

	"github.com/stampede-lab/stampede/internal/torture"
)

// A schedule is drawn from its seed: the same seed gives the same faults,
// which is what makes a failing run reproducible.
func ExampleNewSchedule() {
	a := torture.NewSchedule(42, 10*time.Second, 3, nil)
	b := torture.NewSchedule(42, 10*time.Second, 3, nil)
	fmt.Println(len(a) > 0, fmt.Sprint(a) == fmt.Sprint(b))
	for _, f := range torture.NewSchedule(42, 10*time.Second, 3, []torture.Kind{torture.FaultPause})[:2] {
		fmt.Println(f.Kind)
	}
	// Output:
	// true true
	// pause
	// pause
}
