package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-lab/stampede/internal/testenv"
)

// TestRedisClusterSetting: REDIS_CLUSTER_URL (or -redis-cluster-url) takes
// redis.ParseClusterURL's form, needs LOCK_REDIS_URLS, and refuses to be
// set beside REDIS_URL or -redis-url; unset, the caches stay on REDIS_URL and
// the lock defaults to it.
func TestRedisClusterSetting(t *testing.T) {
	const cluster = "redis://c-0:6379?addr=c-1:6379&addr=c-2:6379"
	const locks = "redis://l-1:6379,redis://l-2:6379,redis://l-3:6379"
	ok := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"env", nil, map[string]string{"REDIS_CLUSTER_URL": cluster, "LOCK_REDIS_URLS": locks}},
		{"flag", []string{"-redis-cluster-url", cluster, "-lock-redis-urls", locks}, nil},
		{"one seed node", nil, map[string]string{"REDIS_CLUSTER_URL": "redis://c-0:6379", "LOCK_REDIS_URLS": "redis://l-1:6379"}},
	}
	for _, tc := range ok {
		_, c, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.redisClusterURL == "" || len(c.lockRedisURLs) == 0 || strings.Contains(strings.Join(c.lockRedisURLs, ","), "c-0") {
			t.Errorf("%s: parsed %+v", tc.name, c)
		}
	}
	_, c, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || c.redisClusterURL != "" || len(c.lockRedisURLs) != 1 || c.lockRedisURLs[0] != c.redisURL {
		t.Errorf("unset: %+v, %v; want the caches and the lock on REDIS_URL's default", c, err)
	}

	bad := []struct {
		name, want string
		args       []string
		env        map[string]string
	}{
		{"no lock URLs", "LOCK_REDIS_URLS", nil, map[string]string{"REDIS_CLUSTER_URL": cluster}},
		{"blank lock URLs", "LOCK_REDIS_URLS", nil, map[string]string{"REDIS_CLUSTER_URL": cluster, "LOCK_REDIS_URLS": " , "}},
		{"REDIS_URL too", "both set", nil, map[string]string{"REDIS_CLUSTER_URL": cluster, "LOCK_REDIS_URLS": locks, "REDIS_URL": "redis://r:6379"}},
		{"-redis-url too", "both set", []string{"-redis-url", "redis://r:6379"}, map[string]string{"REDIS_CLUSTER_URL": cluster, "LOCK_REDIS_URLS": locks}},
		{"not a URL", "REDIS_CLUSTER_URL", nil, map[string]string{"REDIS_CLUSTER_URL": "c-0:6379", "LOCK_REDIS_URLS": locks}},
		{"bad addr", "addr", nil, map[string]string{"REDIS_CLUSTER_URL": "redis://c-0:6379?addr=c-1", "LOCK_REDIS_URLS": locks}},
		{"unknown option", "unexpected option", nil, map[string]string{"REDIS_CLUSTER_URL": "redis://c-0:6379?adr=c-1:6379", "LOCK_REDIS_URLS": locks}},
	}
	for _, tc := range bad {
		_, _, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// TestRunOnRedisCluster runs the api with its caches on a real three-master
// Redis Cluster (REDIS_CLUSTER_URL naming one seed node) and its lock on a
// server of its own: reads and a batch read answer, the cached values land
// on every master (the keys are spread over the slots), a reservation is
// made under the lock, and /health reports the cluster.
func TestRunOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api on a Redis Cluster")
	}
	cluster := testenv.RedisCluster(t, 3)
	lock := testenv.Redis(t)
	seedNode := "redis://" + cluster.Nodes[0].Addr()
	dbURL := testenv.PostgresURL(t)
	_, _, stderr, base := startAPI(t, dbURL, "", "REDIS_CLUSTER_URL="+seedNode, "LOCK_REDIS_URLS="+lock.URL())
	waitFor(t, "/readyz", 10*time.Second, func() bool { return get(base+"/readyz") == http.StatusOK })
	for _, path := range []string{"/v1/categories/1/stats", "/v1/categories/2/stats", "/v1/products/1", "/v1/products?ids=" + idList(1, 60)} {
		if code := get(base + path); code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, code, stderr.String())
		}
	}
	ctx := context.Background()
	perMaster := make([]int64, len(cluster.Nodes))
	for i, n := range cluster.Nodes {
		perMaster[i], _ = n.Client().DBSize(ctx).Result()
	}
	for i, keys := range perMaster {
		if keys == 0 {
			t.Errorf("master %d holds no key after 63 cached values (per master: %v): the caches are not spread over the cluster", i, perMaster)
		}
	}
	body := fmt.Sprintf(`{"product_id": %d, "quantity": 1, "idempotency_key": "cluster-1"}`, inStock(t, dbURL, 1)[0])
	if code := post(base+"/v1/reservations", body); code != http.StatusCreated {
		t.Errorf("reservation: %d, want 201\n%s", code, stderr.String())
	}
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		t.Fatal(err)
	}
	if health.Checks["cache_redis"] != "ok" || health.Checks["lock_redis_1"] != "ok" {
		t.Errorf("/health checks = %v, want the cluster and the lock ok", health.Checks)
	}
}

// idList returns "from,from+1,...,to".
func idList(from, to int) string {
	ids := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	return strings.Join(ids, ",")
}
