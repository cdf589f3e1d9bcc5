package loadgen

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:8080", "http://127.1.2.3", "http://localhost:8080", "https://LOCALHOST",
		"http://[::1]:8080", "http://[::1]",
	} {
		if _, err := ParseTarget(raw, false); err != nil {
			t.Errorf("ParseTarget(%q) = %v, want accepted", raw, err)
		}
	}
	for _, raw := range []string{
		"http://10.0.0.1:8080", "http://example.org", "http://localhost.example.org", "http://0.0.0.0:8080",
		"http://[::]:8080", "http://[2001:db8::1]", "http://128.0.0.1",
	} {
		if _, err := ParseTarget(raw, false); !errors.Is(err, ErrRemoteTarget) {
			t.Errorf("ParseTarget(%q) = %v, want ErrRemoteTarget", raw, err)
		}
		// Allowed explicitly; validation never resolves or connects.
		if _, err := ParseTarget(raw, true); err != nil {
			t.Errorf("ParseTarget(%q, allowRemote) = %v", raw, err)
		}
	}
	for _, raw := range []string{"127.0.0.1:8080", "ftp://127.0.0.1", "http://", "http://%zz"} {
		if _, err := ParseTarget(raw, true); err == nil {
			t.Errorf("ParseTarget(%q) accepted a malformed target", raw)
		}
	}
}

func TestTargetsSpreadAndAdminAll(t *testing.T) {
	var urls []*url.URL
	for _, raw := range []string{"http://127.0.0.1:1", "http://127.0.0.2:2"} {
		u, err := ParseTarget(raw, false)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, u)
	}
	ts, err := NewTargets(urls, time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts.Pick(0) == ts.Pick(1) || ts.Pick(0) != ts.Pick(2) || ts.String() != "http://127.0.0.1:1,http://127.0.0.2:2" {
		t.Errorf("targets %s: picks do not alternate", ts)
	}
	// Admin changes go to every replica: both unreachable, both reported.
	err = ts.AdminPut(t.Context(), "/admin/faults", "t", map[string]int{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "127.0.0.2:2") {
		t.Errorf("AdminPut to two dead replicas: %v", err)
	}
}
