package lockx

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
// Locker built over AutoPipeliners of the clients the test made.
const autoPipelined = "TestOverAutoPipeliner"

// overKind returns nodes, or their AutoPipeliners when t runs under
// TestOverAutoPipeliner.
func overKind(t testing.TB, nodes []redis.UniversalClient) []redis.UniversalClient {
	t.Helper()
	if !strings.HasPrefix(t.Name(), autoPipelined+"/") {
		return nodes
	}
	out := make([]redis.UniversalClient, len(nodes))
	for i, n := range nodes {
		ap, err := n.AutoPipeline()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ap
	}
	return out
}

// TestOverAutoPipeliner runs the tests of the table over the second kind of
// client (docs/lockx.md#clients): every Locker they build rides go-redis's
// AutoPipeliner, Redlock, Pub/Sub wake-ups and hand-overs included.
func TestOverAutoPipeliner(t *testing.T) {
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		{"TestEveryCallIsBoundedByTimeout", TestEveryCallIsBoundedByTimeout},
		{"TestAcquireSpansTellResultAttemptsAndToken", TestAcquireSpansTellResultAttemptsAndToken},
		{"TestLostLockIsAnEventOnTheHoldersSpan", TestLostLockIsAnEventOnTheHoldersSpan},
		{"TestAcquireWaitExemplarIsTheCallersTrace", TestAcquireWaitExemplarIsTheCallersTrace},
		{"TestNoAcquireSpanUnderAnUnsampledParent", TestNoAcquireSpanUnderAnUnsampledParent},
		{"TestRedlockWithAnUnreachableServer", TestRedlockWithAnUnreachableServer},
		{"TestAQuorumWonTooLateIsNotALock", TestAQuorumWonTooLateIsNotALock},
		{"TestAcquireOverrunsWaitByAtMostTimeout", TestAcquireOverrunsWaitByAtMostTimeout},
		{"TestTryAcquireMakesOneAttempt", TestTryAcquireMakesOneAttempt},
		{"TestReleaseAfterTheRequestEnded", TestReleaseAfterTheRequestEnded},
		{"TestHeldSecondsObservesLostLocks", TestHeldSecondsObservesLostLocks},
		{"TestTokensIncreaseAfterARestartFromASnapshot", TestTokensIncreaseAfterARestartFromASnapshot},
		{"TestRedlockTokensIncreaseWithAMajorityRestoredFromSnapshots", TestRedlockTokensIncreaseWithAMajorityRestoredFromSnapshots},
		{"TestFenceCounterExpiresAndRestartsAboveTheLastToken", TestFenceCounterExpiresAndRestartsAboveTheLastToken},
		{"TestTokensIncreaseFasterThanTheClock", TestTokensIncreaseFasterThanTheClock},
		{"TestHandOverGoesToWaitersInArrivalOrder", TestHandOverGoesToWaitersInArrivalOrder},
		{"TestHandOverForgetsAWaiterThatGaveUp", TestHandOverForgetsAWaiterThatGaveUp},
		{"TestHandOverSkipsExpiredWaitersAndPassesOnWhenLeaving", TestHandOverSkipsExpiredWaitersAndPassesOnWhenLeaving},
		{"TestHandOverWithoutTheMessage", TestHandOverWithoutTheMessage},
		{"TestHandOverToACrashedWaiterCostsOneTTL", TestHandOverToACrashedWaiterCostsOneTTL},
		{"TestHandOverExtendsWhenTheLastAttemptIsOld", TestHandOverExtendsWhenTheLastAttemptIsOld},
		{"TestHandOverNeedsNoAttemptOfTheWaiter", TestHandOverNeedsNoAttemptOfTheWaiter},
		{"TestHandOverNeverReturnsALockNobodyHolds", TestHandOverNeverReturnsALockNobodyHolds},
		{"TestAcquireAfterALostReplyAndARetryHoldsTheLock", TestAcquireAfterALostReplyAndARetryHoldsTheLock},
		{"TestAcquireAdoptsAnAttemptThatRanLate", TestAcquireAdoptsAnAttemptThatRanLate},
		{"TestAcquireExcludesAndTokensIncrease", TestAcquireExcludesAndTokensIncrease},
		{"TestAcquireReturnsContextError", TestAcquireReturnsContextError},
		{"TestReleaseLeavesAnotherHoldersLockAlone", TestReleaseLeavesAnotherHoldersLockAlone},
		{"TestWatchdogKeepsTheLockAlive", TestWatchdogKeepsTheLockAlive},
		{"TestExtensionThatFindsTheLockGoneLosesIt", TestExtensionThatFindsTheLockGoneLosesIt},
		{"TestPausedServerLosesTheLockBeforeItExpires", TestPausedServerLosesTheLockBeforeItExpires},
		{"TestNoGoroutineOutlivesRelease", TestNoGoroutineOutlivesRelease},
		{"TestDoReturnsTheFunctionsErrorAndTheLoss", TestDoReturnsTheFunctionsErrorAndTheLoss},
		{"TestWaiterIsWokenByRelease", TestWaiterIsWokenByRelease},
		{"TestMetricsShowContention", TestMetricsShowContention},
		{"TestPausedFirstServerDoesNotStallAWaiter", TestPausedFirstServerDoesNotStallAWaiter},
		{"TestPausedMinorityCostsNoTimeout", TestPausedMinorityCostsNoTimeout},
		{"TestASilentServersVoteIsNotWaitedFor", TestASilentServersVoteIsNotWaitedFor},
		{"TestPausedMinorityUnderContention", TestPausedMinorityUnderContention},
		{"TestRedlockAcquiresWithAMinorityKilled", TestRedlockAcquiresWithAMinorityKilled},
		{"TestRedlockFailsWithAMajorityKilled", TestRedlockFailsWithAMajorityKilled},
		{"TestRedlockPausedMinorityDoesNotStallAcquire", TestRedlockPausedMinorityDoesNotStallAcquire},
		{"TestRedlockWatchdogLosesWhenTheQuorumIsGone", TestRedlockWatchdogLosesWhenTheQuorumIsGone},
		{"TestFencingTokenSurvivesARestartThatLosesData", TestFencingTokenSurvivesARestartThatLosesData},
		{"TestRedlockTokensIncreaseAcrossHandoffsWhileNodesRestart", TestRedlockTokensIncreaseAcrossHandoffsWhileNodesRestart},
		{"TestMutualExclusionUnderStress", TestMutualExclusionUnderStress},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// notOverAutoPipeliner are the tests TestOverAutoPipeliner leaves out, and
// why.
var notOverAutoPipeliner = map[string]string{
	"TestDependsOnTheOtelAPIOnly":                                "no Redis",
	"TestReleaseWaitsForALateAcquire":                            "a hook holds a call back: over an AutoPipeliner it would hold the whole batch, and the stream orders the calls anyway",
	"TestHandOverNeedsOneServer":                                 "checks option validation only",
	"TestNewRefusesAClientThatIgnoresDeadlines":                  "checks New's validation of plain clients' options",
	"TestNewRefusesASafetyMarginWithoutRoomForTheFirstExtension": "checks option validation only",
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
