package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Targets is the API replicas a run drives, one Client each. Load is spread
// over them round robin, and admin changes (strategies, fault knobs) go to
// every replica because each holds its own settings. A Timeline scrapes
// them one by one and sums what they counted.
type Targets []*Client

// NewTargets returns a Client per URL, each with the given request timeout
// and flagging the fraction traceSample (in [0, 1]) of its requests'
// traceparent headers sampled, each request independently.
func NewTargets(urls []*url.URL, timeout time.Duration, traceSample float64) (Targets, error) {
	if len(urls) == 0 {
		return nil, errors.New("no target")
	}
	if !(traceSample >= 0 && traceSample <= 1) {
		return nil, fmt.Errorf("trace sample %v is not in [0, 1]", traceSample)
	}
	ts := make(Targets, 0, len(urls))
	for _, u := range urls {
		c, err := newClient(u.String(), timeout, traceSample)
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

// ErrRemoteTarget is returned (wrapped) by ParseTarget when the target is
// not a loopback address and remote targets are not allowed.
var ErrRemoteTarget = errors.New("target is not a loopback address (127.0.0.0/8, ::1 or localhost); pass -allow-remote to load another host")

// ParseTarget parses raw as an http(s) URL and, unless allowRemote,
// requires its host to be "localhost" or a loopback IP literal
// (127.0.0.0/8, ::1). It never resolves names or connects: a name other
// than localhost is rejected rather than looked up. The error wraps
// ErrRemoteTarget when only the loopback rule failed.
func ParseTarget(raw string, allowRemote bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("-target: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-target %q: scheme must be http or https", raw)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("-target %q: no host", raw)
	}
	if allowRemote || isLoopbackHost(host) {
		return u, nil
	}
	return nil, fmt.Errorf("-target %q: %w", raw, ErrRemoteTarget)
}

// isLoopbackHost reports whether host (without port or brackets) is
// "localhost" or a loopback IP literal, without any name resolution.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CloseIdleConnections closes every replica's idle connections.
func (ts Targets) CloseIdleConnections() {
	for _, c := range ts {
		c.CloseIdleConnections()
	}
}
