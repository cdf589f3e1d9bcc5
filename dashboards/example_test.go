package dashboards_test

import (
	"fmt"

	"github.com/stampede-lab/stampede/dashboards"
)

func ExampleMetricNames() {
	names, err := dashboards.MetricNames(
		`sum(rate(cachex_gets_total{job=~"$job", result="hit"}[$__rate_interval]))` +
			` / sum(rate(cachex_gets_total{job=~"$job"}[$__rate_interval]))` +
			` + histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[$__rate_interval])))`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names)
	// Output: [cachex_gets_total http_request_duration_seconds_bucket]
}

func ExampleSubstitute() {
	fmt.Println(dashboards.Substitute(`rate(lockx_lost_total{job=~"$job", instance=~"$instance"}[$__rate_interval])`))
	// Output: rate(lockx_lost_total{job=~".+", instance=~".+"}[1m])
}
