package cachex

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/testenv"
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

// TestOverAutoPipeliner runs the tests of everyKind over the second kind of
// client (docs/cachex.md#clients): every cache they build rides go-redis's
// AutoPipeliner, scripts, pipelines and cluster paths included.
func TestOverAutoPipeliner(t *testing.T) {
	for _, tt := range everyKind() {
		t.Run(tt.name, tt.run)
	}
}

// TestWithAutoPipelineOption runs the same tests with every cache built
// with Options.AutoPipeline: a call alone goes straight through the client,
// a call while another is in flight through its AutoPipeliner.
func TestWithAutoPipelineOption(t *testing.T) {
	for _, tt := range everyKind() {
		t.Run(tt.name, tt.run)
	}
}

// everyKind are the tests that run over every kind of client.
func everyKind() []struct {
	name string
	run  func(*testing.T)
} {
	return []struct {
		name string
		run  func(*testing.T)
	}{
		{"TestBreakerOpensAfterFailuresAndProbesAfterCooldown", TestBreakerOpensAfterFailuresAndProbesAfterCooldown},
		{"TestSpansTellAMissAndAHit", TestSpansTellAMissAndAHit},
		{"TestSpansOfAnEarlyRefreshAndAFailedLoad", TestSpansOfAnEarlyRefreshAndAFailedLoad},
		{"TestSpansLinkWaitersToTheLeader", TestSpansLinkWaitersToTheLeader},
		{"TestSpansOfGetMany", TestSpansOfGetMany},
		{"TestNoSpansUnderAnUnsampledParent", TestNoSpansUnderAnUnsampledParent},
		{"TestSpansShowTheWaitForALoadSlot", TestSpansShowTheWaitForALoadSlot},
		{"TestRecomputeExemplarIsTheCallersTrace", TestRecomputeExemplarIsTheCallersTrace},
		{"TestGetManyOnAClusterReportsALaterNodesFailure", TestGetManyOnAClusterReportsALaterNodesFailure},
		{"TestBatchRefreshCountsALockErrorAsAnError", TestBatchRefreshCountsALockErrorAsAnError},
		{"TestRedisKilledMidRun", TestRedisKilledMidRun},
		{"TestRedisPausedCallsReturnWithinTimeout", TestRedisPausedCallsReturnWithinTimeout},
		{"TestGetHitAfterMissOneRead", TestGetHitAfterMissOneRead},
		{"TestGetCorruptOrForeignEntryIsCountedAndRecomputed", TestGetCorruptOrForeignEntryIsCountedAndRecomputed},
		{"TestMissIsDeduplicatedInProcess", TestMissIsDeduplicatedInProcess},
		{"TestColdMissWaitsForAnotherInstance", TestColdMissWaitsForAnotherInstance},
		{"TestColdMissLeaseWaitIsBounded", TestColdMissLeaseWaitIsBounded},
		{"TestALoadStartedBeforeInvalidateNeverLandsAfterIt", TestALoadStartedBeforeInvalidateNeverLandsAfterIt},
		{"TestReadAfterInvalidateDoesNotJoinAnOlderLoad", TestReadAfterInvalidateDoesNotJoinAnOlderLoad},
		{"TestEarlyRefreshKeepsTheReadersContextValues", TestEarlyRefreshKeepsTheReadersContextValues},
		{"TestCloseWhileReading", TestCloseWhileReading},
		{"TestLoadsAreBoundedPerCache", TestLoadsAreBoundedPerCache},
		{"TestLoadIsCancelledWhenNoCallerWaits", TestLoadIsCancelledWhenNoCallerWaits},
		{"TestBatchLoadIsCancelledWhenNoCallerWaits", TestBatchLoadIsCancelledWhenNoCallerWaits},
		{"TestGetCluster", TestGetCluster},
		{"TestGetManyDeduplicatesWithConcurrentCalls", TestGetManyDeduplicatesWithConcurrentCalls},
		{"TestGetManyDoesNotRecomputeWhatLandedAfterItsRead", TestGetManyDoesNotRecomputeWhatLandedAfterItsRead},
		{"TestGetManyStaleAndNegative", TestGetManyStaleAndNegative},
		{"TestMetricsMatchTheContract", TestMetricsMatchTheContract},
		{"TestLoaderPanicIsRecoveredOnEveryPath", TestLoaderPanicIsRecoveredOnEveryPath},
		{"TestBreakerHealsAfterAProbeWhoseCallerGaveUp", TestBreakerHealsAfterAProbeWhoseCallerGaveUp},
		{"TestEarlyRefreshRunsInBackgroundDetachedFromCaller", TestEarlyRefreshRunsInBackgroundDetachedFromCaller},
		{"TestEarlyRefreshDucksOutWhenAnotherInstanceHoldsTheLock", TestEarlyRefreshDucksOutWhenAnotherInstanceHoldsTheLock},
		{"TestBackgroundRefreshesAreBounded", TestBackgroundRefreshesAreBounded},
		{"TestInvalidateDropsTheWriteOfARefreshInFlight", TestInvalidateDropsTheWriteOfARefreshInFlight},
		{"TestInvalidateMany", TestInvalidateMany},
		{"TestStaleIfError", TestStaleIfError},
		{"TestNegativeCaching", TestNegativeCaching},
		{"TestStampedeXFetch", TestStampedeXFetch},
		{"TestStampedeTTLBaseline", TestStampedeTTLBaseline},
		{"TestStampedeXFetchWithSkewedClocks", TestStampedeXFetchWithSkewedClocks},
		{"TestStrategySwitchesAtRunTime", TestStrategySwitchesAtRunTime},
		{"TestTwoValueVersionsSideBySide", TestTwoValueVersionsSideBySide},
		{"TestReuseDecodedServesOnlyTheSameEnvelope", TestReuseDecodedServesOnlyTheSameEnvelope},
		{"TestReuseDecodedIsBoundedAndOffByDefault", TestReuseDecodedIsBoundedAndOffByDefault},
	}
}

// notOverAutoPipeliner are the tests TestOverAutoPipeliner leaves out, and
// why.
var notOverAutoPipeliner = map[string]string{
	"TestABypassingReadAfterInvalidateDoesNotJoinAnOlderLoad": "the in-process flights of a cache that cannot reach Redis: no client kind is involved",
	"TestDependsOnTheOtelAPIOnly":                             "no Redis",
	"TestEnvelopeRejectsWhatItDidNotWrite":                    "no Redis",
	"TestEnvelopeRoundTrip":                                   "no Redis",
	"TestGetManyCluster":                                      "counts round trips, which an AutoPipeliner forms",
	"TestGetManySendsAtMost500KeysPerMGET":                    "counts MGETs, which only a plain client sends",
	"TestGetManySingleNode":                                   "counts MGETs, which only a plain client sends",
	"TestNewRefusesAClientWithoutDeadlines":                   "checks New's check of plain clients' options",
	"TestNewRefusesUnusableOptions":                           "checks New's validation of plain clients' options",
	"TestNewRejectsBadOptions":                                "builds no cache over Redis",
	"TestShouldRefreshBoundaries":                             "no Redis",
	"TestUnansweringHostCallsEndAtTimeout":                    "a dial and a read that never end: the deadline is the context's, whatever the client kind",
	"TestXFetchStatistics":                                    "no Redis",
}

// TestOverAutoPipelinerListsEveryTest keeps the table complete: a new test
// runs over both kinds of client unless it is left out with a reason.
func TestOverAutoPipelinerListsEveryTest(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("kinds_test.go")
	if err != nil {
		t.Fatal(err)
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
			case !strings.Contains(string(src), "{\""+name+"\", "+name+"}"):
				t.Errorf("%s: %s runs over a plain client only: add it to TestOverAutoPipeliner's table or to notOverAutoPipeliner with a reason", f, name)
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
	rdb := client(t, testenv.Redis(t))
	h := &lanes{}
	rdb.AddHook(h)
	c, err := New(rdb, JSON[string]{}, Options{Name: "lanes", TTL: time.Minute, AutoPipeline: true, Registerer: prometheus.NewRegistry()})
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
