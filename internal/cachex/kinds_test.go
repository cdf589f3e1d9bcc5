package cachex

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// autoPipelined names the test that runs the package's tests again, each
// cache built over an AutoPipeliner of the client the test made.
const autoPipelined = "TestOverAutoPipeliner"

// overKind returns rdb, or its AutoPipeliner when t runs under
// TestOverAutoPipeliner.
func overKind(t testing.TB, rdb redis.UniversalClient) redis.UniversalClient {
	t.Helper()
	if !strings.HasPrefix(t.Name(), autoPipelined+"/") {
		return rdb
	}
	if _, ok := rdb.(*redis.AutoPipeliner); ok {
		return rdb
	}
	ap, err := rdb.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// TestOverAutoPipeliner runs the tests of the table over the second kind of
// client (docs/cachex.md#clients): every cache they build rides go-redis's
// AutoPipeliner, scripts, pipelines and cluster paths included.
func TestOverAutoPipeliner(t *testing.T) {
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		{"TestBreakerOpensAfterFailuresAndProbesAfterCooldown", TestBreakerOpensAfterFailuresAndProbesAfterCooldown},
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
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// notOverAutoPipeliner are the tests TestOverAutoPipeliner leaves out, and
// why.
var notOverAutoPipeliner = map[string]string{
	"TestEnvelopeRejectsWhatItDidNotWrite": "no Redis",
	"TestEnvelopeRoundTrip":                "no Redis",
	"TestGetManyCluster":                   "counts round trips, which an AutoPipeliner forms",
	"TestGetManySendsAtMost500KeysPerMGET": "counts MGETs, which only a plain client sends",
	"TestGetManySingleNode":                "counts MGETs, which only a plain client sends",
	"TestNewRefusesUnusableOptions":        "checks New's validation of plain clients' options",
	"TestNewRejectsBadOptions":             "builds no cache over Redis",
	"TestShouldRefreshBoundaries":          "no Redis",
	"TestXFetchStatistics":                 "no Redis",
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
			case name == "TestMain" || name == autoPipelined || name == "TestOverAutoPipelinerListsEveryTest":
			case notOverAutoPipeliner[name] != "":
			case !strings.Contains(string(src), "{\""+name+"\", "+name+"}"):
				t.Errorf("%s: %s runs over a plain client only: add it to TestOverAutoPipeliner's table or to notOverAutoPipeliner with a reason", f, name)
			}
		}
	}
}
