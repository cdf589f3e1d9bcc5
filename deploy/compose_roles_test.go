package deploy_test

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// lockMasters is how many lock Redis servers each compose variant runs: a
// Redlock quorum of three in the full demo, a single-node lock in the minimal.
var lockMasters = map[string]int{"compose.yaml": 3, "compose.minimal.yaml": 1}

// memLimit matches a non-zero redis.conf memory size (256mb, 1gb, 1000000).
var memLimit = regexp.MustCompile(`(?i)^[1-9][0-9]*(k|kb|m|mb|g|gb)?$`)

// evicting matches the maxmemory policies that evict keys (Redis 7).
var evicting = regexp.MustCompile(`^(allkeys-(lru|lfu|random)|volatile-(lru|lfu|random|ttl))$`)

// TestComposeRedisRoles checks that each variant splits the Redis roles: the
// cache's server (REDIS_URL) is bounded and evicts, every lock server
// (LOCK_REDIS_URLS) runs noeviction, and no server is both. Every service
// that is given the URLs is given the same ones.
func TestComposeRedisRoles(t *testing.T) {
	root := repoRoot(t)
	for _, v := range variants {
		t.Run(v.compose, func(t *testing.T) {
			p := loadProject(t, root, v.compose)
			var cache string
			var locks []string
			for _, name := range p.ServiceNames() {
				svc := p.Services[name]
				if svc.Environment["REDIS_URL"] == nil {
					continue
				}
				c, l := redisHosts(t, svc)
				if cache == "" {
					cache, locks = c, l
				} else if c != cache || !slices.Equal(l, locks) {
					t.Errorf("service %s uses cache %s and locks %v; others use %s and %v", name, c, l, cache, locks)
				}
			}
			if cache == "" {
				t.Fatal("no service sets REDIS_URL")
			}
			if slices.Contains(locks, cache) {
				t.Errorf("REDIS_URL's server %s is also in LOCK_REDIS_URLS %v: the cache's evictions would drop lock keys", cache, locks)
			}
			if want := lockMasters[v.compose]; len(locks) != want {
				t.Errorf("LOCK_REDIS_URLS names %d servers %v, want %d", len(locks), locks, want)
			}
			if c := slices.Compact(slices.Sorted(slices.Values(locks))); len(c) != len(locks) {
				t.Errorf("LOCK_REDIS_URLS names a server twice: %v", locks)
			}

			flags := redisFlags(t, p, cache)
			if m := flags["maxmemory"]; !memLimit.MatchString(m) {
				t.Errorf("cache Redis %s: --maxmemory %q, want a limit (e.g. 256mb): without one it never evicts", cache, m)
			}
			if pol := flags["maxmemory-policy"]; !evicting.MatchString(pol) {
				t.Errorf("cache Redis %s: --maxmemory-policy %q, want allkeys-* or volatile-*", cache, pol)
			}
			for _, l := range locks {
				if pol := redisFlags(t, p, l)["maxmemory-policy"]; pol != "noeviction" {
					t.Errorf("lock Redis %s: --maxmemory-policy %q, want noeviction (a lock key must never be evicted)", l, pol)
				}
			}
		})
	}
}

// TestComposeGrafanaLogin checks that Grafana is view-only in each variant:
// anonymous viewers, and no sign-in (so the image's default admin password
// cannot be used), with no admin password set in the file either.
func TestComposeGrafanaLogin(t *testing.T) {
	root := repoRoot(t)
	want := map[string]string{
		"GF_AUTH_ANONYMOUS_ENABLED":  "true",
		"GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer",
		"GF_AUTH_DISABLE_LOGIN":      "true",
		"GF_AUTH_DISABLE_LOGIN_FORM": "true",
		"GF_AUTH_BASIC_ENABLED":      "false",
	}
	for _, v := range variants {
		t.Run(v.compose, func(t *testing.T) {
			g, err := loadProject(t, root, v.compose).GetService("grafana")
			if err != nil {
				t.Fatal(err)
			}
			for k, w := range want {
				if got := g.Environment[k]; got == nil || *got != w {
					t.Errorf("service grafana: %s = %v, want %q", k, deref(got), w)
				}
			}
			for _, k := range []string{"GF_SECURITY_ADMIN_PASSWORD", "GF_SECURITY_ADMIN_PASSWORD__FILE"} {
				if got, ok := g.Environment[k]; ok {
					t.Errorf("service grafana sets %s (%v): sign-in is disabled, a password suggests otherwise", k, deref(got))
				}
			}
		})
	}
}

// redisHosts returns the service names in svc's REDIS_URL and
// LOCK_REDIS_URLS.
func redisHosts(t *testing.T, svc types.ServiceConfig) (cache string, locks []string) {
	t.Helper()
	host := func(raw string) string {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Hostname() == "" {
			t.Errorf("service %s: Redis URL %q has no host", svc.Name, raw)
			return ""
		}
		return u.Hostname()
	}
	r, l := svc.Environment["REDIS_URL"], svc.Environment["LOCK_REDIS_URLS"]
	if r == nil || l == nil {
		t.Errorf("service %s: REDIS_URL and LOCK_REDIS_URLS must both be set", svc.Name)
		return "", nil
	}
	for raw := range strings.SplitSeq(*l, ",") {
		locks = append(locks, host(raw))
	}
	return host(*r), locks
}

// redisFlags returns the --name value options of the redis-server command of
// service name.
func redisFlags(t *testing.T, p *types.Project, name string) map[string]string {
	t.Helper()
	svc, err := p.GetService(name)
	if err != nil {
		t.Errorf("Redis %s is not a service: %v", name, err)
		return nil
	}
	cmd := svc.Command
	if len(cmd) == 0 || cmd[0] != "redis-server" {
		t.Errorf("service %s: command %q, want redis-server with options", name, cmd)
		return nil
	}
	flags := map[string]string{}
	for i := 1; i < len(cmd); i++ {
		if k, ok := strings.CutPrefix(cmd[i], "--"); ok && i+1 < len(cmd) {
			flags[k] = cmd[i+1]
			i++
		}
	}
	return flags
}

// deref prints a possibly unset environment value.
func deref(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}
