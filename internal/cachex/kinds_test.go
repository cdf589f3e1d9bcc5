package cachex

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/redistest"
)

// autoPipelined and autoPipelineOption name the tests that run the
// package's tests again: each cache built over an AutoPipeliner of the
// client the test made, or over the client with Options.AutoPipeline.
const (
	autoPipelined      = "TestOverAutoPipeliner"
	autoPipelineOption = "TestWithAutoPipelineOption"
)

// overKind returns the client and options of a cache of the test t: rdb and
// opts, or under TestOverAutoPipeliner rdb's AutoPipeliner, or under
// TestWithAutoPipelineOption opts with AutoPipeline set.
func overKind(t testing.TB, rdb redis.UniversalClient, opts Options) (redis.UniversalClient, Options) {
	t.Helper()
	if strings.HasPrefix(t.Name(), autoPipelineOption+"/") {
		opts.AutoPipeline = true
		return rdb, opts
	}
	if !strings.HasPrefix(t.Name(), autoPipelined+"/") {
		return rdb, opts
	}
	if _, ok := rdb.(*redis.AutoPipeliner); ok {
		return rdb, opts
	}
	ap, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	return ap, opts
}

// TestOverAutoPipeliner runs the tests of overAutoPipeliner over the second
// kind of client: every cache they build rides
// go-redis's AutoPipeliner, scripts, pipelines and cluster paths included.
func TestOverAutoPipeliner(t *testing.T) {
	t.Parallel()
	for _, tt := range overAutoPipeliner() {
		t.Run(tt.name, tt.run)
	}
}

// TestWithAutoPipelineOption runs the tests of withAutoPipelineOption with
// every cache built with Options.AutoPipeline: a call alone goes straight
// through the client, a call while another is in flight through its
// AutoPipeliner.
func TestWithAutoPipelineOption(t *testing.T) {
	t.Parallel()
	for _, tt := range withAutoPipelineOption() {
		t.Run(tt.name, tt.run)
	}
}

// kindTest is a test that runs again over another kind of client.
type kindTest struct {
	name string
	run  func(*testing.T)
}

// overAutoPipeliner are the tests whose Redis calls take another path when
// a cache rides an AutoPipeliner (conn.go's batched lane): each kind of
// command (GET, the lock, lease and write scripts, pipelines, the cluster's
// per-node batches), error replies, a Redis that is killed, paused or slow
// past Timeout, and callers that stop waiting or a Close while calls are
// queued. The kind changes nothing else, so the tests of what a cache does
// in-process run over a plain client only (notOverAutoPipeliner says why
// for each).
func overAutoPipeliner() []kindTest {
	return []kindTest{
		{"TestGetHitAfterMissOneRead", TestGetHitAfterMissOneRead},
		{"TestGetAndGetManyAgreeOnEveryReplyKind", TestGetAndGetManyAgreeOnEveryReplyKind},
		{"TestGetAndGetManyAgreeOnEveryReplyKindOnACluster", TestGetAndGetManyAgreeOnEveryReplyKindOnACluster},
		{"TestGetCorruptOrForeignEntryIsCountedAndRecomputed", TestGetCorruptOrForeignEntryIsCountedAndRecomputed},
		{"TestColdMissWaitsForAnotherInstance", TestColdMissWaitsForAnotherInstance},
		{"TestALoadStartedBeforeInvalidateNeverLandsAfterIt", TestALoadStartedBeforeInvalidateNeverLandsAfterIt},
		{"TestInvalidateDropsTheWriteOfARefreshInFlight", TestInvalidateDropsTheWriteOfARefreshInFlight},
		{"TestInvalidateMany", TestInvalidateMany},
		{"TestEarlyRefreshRunsInBackgroundDetachedFromCaller", TestEarlyRefreshRunsInBackgroundDetachedFromCaller},
		{"TestEarlyRefreshDucksOutWhenAnotherInstanceHoldsTheLock", TestEarlyRefreshDucksOutWhenAnotherInstanceHoldsTheLock},
		{"TestBatchRefreshCountsALockErrorAsAnError", TestBatchRefreshCountsALockErrorAsAnError},
		{"TestGetManyDeduplicatesWithConcurrentCalls", TestGetManyDeduplicatesWithConcurrentCalls},
		{"TestGetManyStaleAndNegative", TestGetManyStaleAndNegative},
		{"TestGetCluster", TestGetCluster},
		{"TestGetManyOnAClusterReportsALaterNodesFailure", TestGetManyOnAClusterReportsALaterNodesFailure},
		{"TestCloseWhileReading", TestCloseWhileReading},
		{"TestRedisKilledMidRun", TestRedisKilledMidRun},
		{"TestRedisPausedCallsReturnWithinTimeout", TestRedisPausedCallsReturnWithinTimeout},
		{"TestBreakerHealsAfterAProbeWhoseCallerGaveUp", TestBreakerHealsAfterAProbeWhoseCallerGaveUp},
	}
}

// withAutoPipelineOption are the tests of overAutoPipeliner in which calls
// of one cache overlap. Only there does a cache with Options.AutoPipeline
// take both lanes: a call alone takes the plain one, exactly as over a plain
// client, and TestAutoPipelineOptionBatchesOnlyOverlappingCalls checks that
// choice.
func withAutoPipelineOption() []kindTest {
	return []kindTest{
		{"TestGetManyDeduplicatesWithConcurrentCalls", TestGetManyDeduplicatesWithConcurrentCalls},
		{"TestCloseWhileReading", TestCloseWhileReading},
		{"TestRedisKilledMidRun", TestRedisKilledMidRun},
	}
}

// Why a test runs over a plain client only.
const (
	noRedis   = "no Redis"
	inProcess = "asserts what the cache does in the process (flights, slots, contexts, spans, metrics, strategies, decoded values); " +
		"its Redis calls are ordinary ones, made over every kind of client by the tests of overAutoPipeliner"
	statistics = "XFetch's statistics on a virtual clock, thousands of reads; its Redis calls (the lease, the refresh lock, " +
		"the guarded writes) are those of TestColdMissWaitsForAnotherInstance, TestEarlyRefreshDucksOutWhenAnotherInstanceHoldsTheLock " +
		"and TestALoadStartedBeforeInvalidateNeverLandsAfterIt, which run over every kind"
)

// notOverAutoPipeliner are the tests TestOverAutoPipeliner leaves out, and
// why.
var notOverAutoPipeliner = map[string]string{
	"TestNewRefusesAClientWithoutDeadlines":                   "checks New's check of the options of every kind of client",
	"TestNewAcceptsAClientWithDeadlines":                      "checks New's check of the options of every kind of client",
	"TestNewAcceptsTheRedistestClient":                        "checks that New accepts redistest.Client's client",
	"TestUnansweringHostCallsEndAtTimeout":                    "a dial and a read that never end: the deadline is the context's, whatever the client kind",
	"TestABypassingReadAfterInvalidateDoesNotJoinAnOlderLoad": "the in-process flights of a cache that cannot reach Redis: no client kind is involved",
	"TestBackgroundRefreshesAreBounded":                       inProcess,
	"TestBatchLoadIsCancelledWhenNoCallerWaits":               inProcess,
	"TestBreakerOpensAfterFailuresAndProbesAfterCooldown":     noRedis,
	"TestDeadlinesEndEveryCallWithinTimeout":                  noRedis,
	"TestColdMissLeaseWaitIsBounded":                          inProcess,
	"TestDependsOnTheOtelAPIOnly":                             noRedis,
	"TestEarlyRefreshKeepsTheReadersContextValues":            inProcess,
	"TestEnvelopeRejectsWhatItDidNotWrite":                    noRedis,
	"TestEnvelopeRoundTrip":                                   noRedis,
	"TestGetManyCluster":                                      "counts round trips, which an AutoPipeliner forms",
	"TestGetManyDoesNotRecomputeWhatLandedAfterItsRead":       inProcess,
	"TestGetManySendsAtMost500KeysPerMGET":                    "counts MGETs, which only a plain client sends",
	"TestGetManySingleNode":                                   "counts MGETs, which only a plain client sends",
	"TestLoadIsCancelledWhenNoCallerWaits":                    inProcess,
	"TestLoaderPanicIsRecoveredOnEveryPath":                   inProcess,
	"TestLoadsAreBoundedPerCache":                             inProcess,
	"TestMetricsMatchTheContract":                             inProcess,
	"TestMissIsDeduplicatedInProcess":                         inProcess,
	"TestNegativeCaching":                                     inProcess,
	"TestNewRefusesUnusableOptions":                           "checks New's validation of plain clients' options",
	"TestNewRejectsBadOptions":                                "builds no cache over Redis",
	"TestNoSpansUnderAnUnsampledParent":                       inProcess,
	"TestReadAfterInvalidateDoesNotJoinAnOlderLoad":           inProcess,
	"TestRecomputeExemplarIsTheCallersTrace":                  inProcess,
	"TestReuseDecodedIsBoundedAndOffByDefault":                inProcess,
	"TestReuseDecodedServesOnlyTheSameEnvelope":               inProcess,
	"TestShouldRefreshBoundaries":                             noRedis,
	"TestSpansLinkWaitersToTheLeader":                         inProcess,
	"TestSpansOfAnEarlyRefreshAndAFailedLoad":                 inProcess,
	"TestSpansOfGetMany":                                      inProcess,
	"TestSpansShowTheWaitForALoadSlot":                        inProcess,
	"TestSpansTellAMissAndAHit":                               inProcess,
	"TestStaleIfError":                                        inProcess,
	"TestStampedeTTLBaseline":                                 statistics,
	"TestStampedeXFetch":                                      statistics,
	"TestStampedeXFetchWithSkewedClocks":                      statistics,
	"TestStrategySwitchesAtRunTime":                           inProcess,
	"TestTwoValueVersionsSideBySide":                          inProcess,
	"TestXFetchStatistics":                                    noRedis,
	"TestNearCacheServesHitsWithoutARoundTrip":                nearCache,
	"TestNearCacheReadsItsOwnInvalidate":                      nearCache,
	"TestNearCacheFollowsTheServerThroughFaults":              nearCache,
	"TestNewRefusesANearCacheWithoutABound":                   nearCache,
	"TestNearCacheCollectorCountsWhatTheClientDid":            nearCache,
}

// nearCache is why the near cache's tests run over a plain client only:
// go-redis keeps client-side caching on a *redis.Client, and a near hit
// never takes the batched lane.
const nearCache = "go-redis's client-side caching is on a *redis.Client only"

// TestOverAutoPipelinerListsEveryTest keeps the tables complete: a new test
// runs over both kinds of client unless it is left out with a reason, and
// withAutoPipelineOption takes only tests of overAutoPipeliner.
func TestOverAutoPipelinerListsEveryTest(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	over := map[string]bool{}
	for _, tt := range overAutoPipeliner() {
		over[tt.name] = true
	}
	for _, tt := range withAutoPipelineOption() {
		if !over[tt.name] {
			t.Errorf("%s is in withAutoPipelineOption but not in overAutoPipeliner", tt.name)
		}
	}
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			name := fn.Name.Name
			switch {
			case name == "TestMain" || name == autoPipelined || name == autoPipelineOption || name == "TestOverAutoPipelinerListsEveryTest",
				name == "TestAutoPipelineOptionBatchesOnlyOverlappingCalls":
			case notOverAutoPipeliner[name] != "":
				if over[name] {
					t.Errorf("%s: %s is in overAutoPipeliner and left out of it", f, name)
				}
			case !over[name]:
				t.Errorf("%s: %s runs over a plain client only: add it to overAutoPipeliner or to notOverAutoPipeliner with a reason", f, name)
			}
		}
	}
}

// lanes counts GETs sent on their own and GETs sent in pipelines (an
// AutoPipeliner's batches are pipelines).
type lanes struct{ alone, batched atomic.Int64 }

func (h *lanes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lanes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" {
			h.alone.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *lanes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == "get" {
				h.batched.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// With Options.AutoPipeline a read alone goes straight through the client,
// and reads that overlap go through its AutoPipeliner.
func TestAutoPipelineOptionBatchesOnlyOverlappingCalls(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Redis(t))
	h := &lanes{}
	rdb.AddHook(h)
	// Timeout as newCache's: a GET that timed out on a busy machine would open
	// the breaker and leave reads unsent.
	c, err := New(rdb, JSON[string]{}, Options{Name: "lanes", TTL: time.Minute, AutoPipeline: true, Timeout: 5 * time.Second,
		Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := context.Background()
	load := func(context.Context) (string, error) { return "v", nil }
	for range 20 {
		if _, err := c.Get(ctx, "k", load); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := h.alone.Load(), h.batched.Load(); a != 20 || b != 0 {
		t.Fatalf("20 reads one after another: %d GETs alone, %d batched; want 20 and 0", a, b)
	}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				if _, err := c.Get(ctx, "k", load); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if a, b := h.alone.Load()-20, h.batched.Load(); a+b != 32*50 || b == 0 {
		t.Fatalf("32 goroutines' 1600 reads: %d GETs alone, %d batched; want some batched, all sent", a, b)
	}
}
