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

// TestOverAutoPipeliner runs again, each Locker built over AutoPipeliners,
// the tests where the kind of client matters: those
// whose calls take the AutoPipeliner's own path in node.run (deferred
// submission, a wait for the reply that only the call's deadline ends, the
// NOSCRIPT fallback), whose replies are lost, repeated, delayed or abandoned
// inside its shared batches (paused, unreachable and killed servers, hooks),
// whose Pub/Sub passes through it, and the stress test, whose many
// goroutines share its batches. The other tests check logic above node.run
// (tokens, validity, the watchdog's timing, metrics, spans, scripts), which
// the kind does not change; notOverAutoPipeliner gives each its reason.
func TestOverAutoPipeliner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		{"TestAcquireExcludesAndTokensIncrease", TestAcquireExcludesAndTokensIncrease},
		{"TestEveryCallIsBoundedByTimeout", TestEveryCallIsBoundedByTimeout},
		{"TestAcquireOverrunsWaitByAtMostTimeout", TestAcquireOverrunsWaitByAtMostTimeout},
		{"TestRedlockWithAnUnreachableServer", TestRedlockWithAnUnreachableServer},
		{"TestRedlockFailsWithAMajorityKilled", TestRedlockFailsWithAMajorityKilled},
		{"TestPausedMinorityCostsNoTimeout", TestPausedMinorityCostsNoTimeout},
		{"TestASilentServersVoteIsNotWaitedFor", TestASilentServersVoteIsNotWaitedFor},
		{"TestPausedMinorityUnderContention", TestPausedMinorityUnderContention},
		{"TestRedlockPausedMinorityDoesNotStallAcquire", TestRedlockPausedMinorityDoesNotStallAcquire},
		{"TestPausedFirstServerDoesNotStallAWaiter", TestPausedFirstServerDoesNotStallAWaiter},
		{"TestWaiterIsWokenByRelease", TestWaiterIsWokenByRelease},
		{"TestHandOverNeedsNoAttemptOfTheWaiter", TestHandOverNeedsNoAttemptOfTheWaiter},
		{"TestHandOverNeverReturnsALockNobodyHolds", TestHandOverNeverReturnsALockNobodyHolds},
		{"TestAcquireAfterALostReplyAndARetryHoldsTheLock", TestAcquireAfterALostReplyAndARetryHoldsTheLock},
		{"TestAcquireAdoptsAnAttemptThatRanLate", TestAcquireAdoptsAnAttemptThatRanLate},
		{"TestFencingTokenSurvivesARestartThatLosesData", TestFencingTokenSurvivesARestartThatLosesData},
		{"TestMutualExclusionUnderStress", TestMutualExclusionUnderStress},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// Why a test runs over plain clients only.
const (
	noRedis     = "no Redis"
	validation  = "checks New's validation only"
	aboveClient = "checks logic above node.run, which the kind of client does not change"
	onAClient   = "a hook holds a call back: over an AutoPipeliner it would hold the whole batch, and the stream orders the calls anyway"
)

// notOverAutoPipeliner are the tests TestOverAutoPipeliner leaves out, and
// why.
var notOverAutoPipeliner = map[string]string{
	"TestDependsOnTheOtelAPIOnly":                                 noRedis,
	"TestHandOverNeedsOneServer":                                  validation,
	"TestNewRefusesAClientThatIgnoresDeadlines":                   validation,
	"TestNewAcceptsTheRedistestClient":                            validation,
	"TestNewRefusesASafetyMarginWithoutRoomForTheFirstExtension":  validation,
	"TestReleaseWaitsForALateAcquire":                             onAClient,
	"TestAQuorumWonTooLateIsNotALock":                             aboveClient, // validity of a slow quorum
	"TestAcquireReturnsContextError":                              aboveClient,
	"TestAcquireSpansTellResultAttemptsAndToken":                  aboveClient,
	"TestAcquireWaitExemplarIsTheCallersTrace":                    aboveClient,
	"TestDoReturnsTheFunctionsErrorAndTheLoss":                    aboveClient,
	"TestExtensionThatFindsTheLockGoneLosesIt":                    aboveClient,
	"TestFenceCounterExpiresAndRestartsAboveTheLastToken":         aboveClient,
	"TestHandOverExtendsWhenTheLastAttemptIsOld":                  aboveClient,
	"TestHandOverForgetsAWaiterThatGaveUp":                        aboveClient,
	"TestHandOverGoesToWaitersInArrivalOrder":                     aboveClient, // the queue is a script's
	"TestHandOverSkipsExpiredWaitersAndPassesOnWhenLeaving":       aboveClient,
	"TestHandOverToACrashedWaiterCostsOneTTL":                     aboveClient,
	"TestHandOverWithoutTheMessage":                               aboveClient,
	"TestHeldSecondsObservesLostLocks":                            aboveClient,
	"TestLostLockIsAnEventOnTheHoldersSpan":                       aboveClient,
	"TestMetricsShowContention":                                   aboveClient,
	"TestNoAcquireSpanUnderAnUnsampledParent":                     aboveClient,
	"TestNoGoroutineOutlivesRelease":                              aboveClient, // lockx's goroutines, not the client's
	"TestPausedServerLosesTheLockBeforeItExpires":                 aboveClient, // the loss timer runs apart from the calls
	"TestRedlockAcquiresWithAMinorityKilled":                      aboveClient, // killed servers: TestRedlockFailsWithAMajorityKilled
	"TestRedlockTokensIncreaseAcrossHandoffsWhileNodesRestart":    aboveClient, // restarts: TestFencingTokenSurvivesARestartThatLosesData
	"TestRedlockTokensIncreaseWithAMajorityRestoredFromSnapshots": aboveClient,
	"TestRedlockWatchdogLosesWhenTheQuorumIsGone":                 aboveClient,
	"TestReleaseAfterTheRequestEnded":                             aboveClient,
	"TestReleaseLeavesAnotherHoldersLockAlone":                    aboveClient,
	"TestTokensIncreaseAfterARestartFromASnapshot":                aboveClient,
	"TestTokensIncreaseFasterThanTheClock":                        aboveClient,
	"TestTryAcquireMakesOneAttempt":                               aboveClient,
	"TestWatchdogKeepsTheLockAlive":                               aboveClient,
}

// TestOverAutoPipelinerListsEveryTest makes every test choose: a new test
// runs over both kinds of client or is left out with a reason.
func TestOverAutoPipelinerListsEveryTest(t *testing.T) {
	t.Parallel()
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
				t.Errorf("%s: %s is in neither TestOverAutoPipeliner's table nor notOverAutoPipeliner: add it to one", f, name)
			}
		}
	}
}
