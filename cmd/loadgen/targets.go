package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Targets is the API replicas a run drives, one Client each. Load is spread
// over them round robin, admin changes (strategies, fault knobs) go to every
// replica because each holds its own settings, and scrapes are summed so a
// counter delta covers the whole service.
type Targets []*Client

// NewTargets returns a Client per URL, each with the given request timeout.
func NewTargets(urls []*url.URL, timeout time.Duration) (Targets, error) {
	if len(urls) == 0 {
		return nil, errors.New("no target")
	}
	ts := make(Targets, 0, len(urls))
	for _, u := range urls {
		c, err := NewClient(u.String(), timeout)
		if err != nil {
			return nil, err
		}
		ts = append(ts, c)
	}
	return ts, nil
}

// Pick returns the replica for the seq-th request of a schedule.
func (ts Targets) Pick(seq int64) *Client { return ts[uint64(seq)%uint64(len(ts))] }

// String lists the base URLs, comma-separated, as -target takes them.
func (ts Targets) String() string {
	s := make([]string, len(ts))
	for i, c := range ts {
		s[i] = c.base
	}
	return strings.Join(s, ",")
}

// AdminPut sends the same admin change to every replica and returns the
// failures joined (nil when all accepted it).
func (ts Targets) AdminPut(ctx context.Context, path, token string, body any) error {
	var errs []error
	for _, c := range ts {
		if err := c.AdminPut(ctx, path, token, body); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.base, err))
		}
	}
	return errors.Join(errs...)
}

// Scrape reads every replica's /metrics and returns the sum of each series
// over them. It fails if any replica cannot be read: a partial sum would
// make counter deltas wrong.
func (ts Targets) Scrape(ctx context.Context) (map[string]float64, error) {
	total := make(map[string]float64)
	for _, c := range ts {
		m, err := c.Scrape(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.base, err)
		}
		for k, v := range m {
			total[k] += v
		}
	}
	return total, nil
}

// CloseIdleConnections closes every replica's idle connections.
func (ts Targets) CloseIdleConnections() {
	for _, c := range ts {
		c.CloseIdleConnections()
	}
}
