package scrape_test

import (
	"fmt"
	"strings"

	"github.com/stampede-lab/stampede/internal/loadgen/scrape"
)

// Two scrapes of two replicas' counters, the second replica restarted in
// between: its increase is its new value, not a negative difference.
func ExampleIncrease() {
	before, _ := scrape.Parse(strings.NewReader(`
catalog_db_query_duration_seconds_count{replica="a"} 100
catalog_db_query_duration_seconds_count{replica="b"} 1477
`))
	after, _ := scrape.Parse(strings.NewReader(`
catalog_db_query_duration_seconds_count{replica="a"} 160
catalog_db_query_duration_seconds_count{replica="b"} 300
`))
	inc := scrape.Increase(before, after)
	fmt.Println(inc.Sum("catalog_db_query_duration_seconds_count", nil))
	fmt.Println(after.Sum("catalog_db_query_duration_seconds_count", nil) - before.Sum("catalog_db_query_duration_seconds_count", nil))
	// Output:
	// 360
	// -1117
}
