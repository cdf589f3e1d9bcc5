package torture

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/stampede-lab/stampede/internal/catalog"
)

// holdOp is one client operation on the reservation of one idempotency
// key, for porcupine: a reservation (new, retried or replayed), a cancel
// or a read of it.
type holdOp struct {
	client int
	key    string
	kind   string // reserve, cancel, read
	// outcome: reserve: created (201), replayed (200), refused (409, 503
	// busy), unknown; cancel: done (200), missing (404), unknown; read:
	// done, missing.
	outcome string
	// id, status and expires are what the answer said of the reservation,
	// when it said it (expires in Unix ns); a refusal's status is its
	// problem type.
	id      int64
	status  string
	expires int64
	// call and ret are wall-clock Unix ns, comparable with expires.
	call, ret int64
	// api is the instance that was asked, from 1.
	api int
}

// holdState is a key's reservation as the model sees it: none yet (""),
// active, cancelled or expired; id and expires once an answer named them.
type holdState struct {
	status  string
	id      int64
	expires int64
}

// expirySlack is how much earlier than its expires_at the model lets a hold
// read as expired: the database's clock and this process's are one
// machine's, read at different instants.
const expirySlack = 250 * time.Millisecond

// holdsModel is the lifecycle of a hold: an intent that is refused leaves
// nothing; a 201 makes it active; a cancel answered 200 ends it for good,
// and a later read or cancel that finds it active is not linearizable; an
// active hold may expire at any time after its expires_at. An answer that
// does not say what happened may have taken effect or not.
func holdsModel() porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range h {
				k := op.Input.(holdOp).key
				if _, ok := byKey[k]; !ok {
					order = append(order, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, k := range order {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() []any { return []any{holdState{}} },
		Step: func(state, input, _ any) []any {
			op := input.(holdOp)
			var out []any
			for _, s := range state.(holdState).beforeOp(op) {
				for _, next := range s.apply(op) {
					out = append(out, next)
				}
			}
			return out
		},
		DescribeOperation: func(input, _ any) string {
			op := input.(holdOp)
			return fmt.Sprintf("%s %s → %s %s (id %d)", op.kind, op.key, op.outcome, op.status, op.id)
		},
		DescribeState: func(state any) string {
			s := state.(holdState)
			if s.status == "" {
				return "no hold"
			}
			return fmt.Sprintf("%s (id %d)", s.status, s.id)
		},
	}).ToModel()
}

// beforeOp returns s, and s expired if it is an active hold that may have
// expired before op returned.
func (s holdState) beforeOp(op holdOp) []holdState {
	if s.status == catalog.StatusActive && (s.expires == 0 || op.ret >= s.expires-expirySlack.Nanoseconds()) {
		e := s
		e.status = catalog.StatusExpired
		return []holdState{s, e}
	}
	return []holdState{s}
}

// apply returns the states op can leave s in; none if op cannot follow s.
func (s holdState) apply(op holdOp) []holdState {
	if op.id != 0 {
		if s.id != 0 && s.id != op.id {
			return nil
		}
		s.id = op.id
	}
	if op.expires != 0 {
		s.expires = op.expires
	}
	answered := func() []holdState { // the answer named the status
		if s.status == op.status {
			return []holdState{s}
		}
		return nil
	}
	switch op.kind + " " + op.outcome {
	case "reserve created", "reserve replayed":
		if s.status != "" {
			return answered() // an earlier attempt with the key made it
		}
		// Made active by this request, or, as a replay, by the
		// reconciler or another instance finishing the intent it
		// recorded; an attempt that settles its outcome by a look-up
		// reads it back, expired if its expires_at passed meanwhile.
		s.status = catalog.StatusActive
		for _, t := range s.beforeOp(op) {
			if t.status == op.status {
				return []holdState{t}
			}
		}
		return nil
	case "read done":
		return answered()
	case "reserve refused", "cancel missing", "read missing":
		if s.status == "" {
			return []holdState{s}
		}
		return nil
	case "reserve unknown":
		if s.status == "" {
			a := s
			a.status = catalog.StatusActive
			return []holdState{s, a}
		}
		return []holdState{s}
	case "cancel done":
		if s.status == catalog.StatusActive && op.status == catalog.StatusCancelled {
			s.status = catalog.StatusCancelled
			return []holdState{s}
		}
		if s.status == "" {
			return nil
		}
		return answered()
	case "cancel unknown":
		if s.status == catalog.StatusActive {
			c := s
			c.status = catalog.StatusCancelled
			return []holdState{s, c}
		}
		return []holdState{s}
	}
	return []holdState{s}
}

// checkHolds checks ops against holdsModel. When they are not
// linearizable it names the first key whose answers no order explains, with
// its operations, and writes porcupine's visualisation to
// outDir/linearizability.html.
func checkHolds(ops []holdOp, outDir string) []Anomaly {
	hist := holdsHistory(ops)
	model := holdsModel()
	res, info := porcupine.CheckOperationsVerbose(model, hist, time.Minute)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return []Anomaly{{Check: checkHoldsName, Detail: "the check ran out of its minute: no verdict"}}
	}
	a := Anomaly{Check: checkHoldsName,
		Detail: fmt.Sprintf("the %d operations on holds are not linearizable: some key's answers cannot be explained by any order", len(ops))}
	a.Excerpt = unexplainedKey(model, hist)
	if outDir != "" {
		path := filepath.Join(outDir, "linearizability.html")
		if err := os.MkdirAll(outDir, 0o755); err == nil {
			if err := porcupine.VisualizePath(model, info, path); err == nil {
				a.Excerpt = append(a.Excerpt, "visualisation: "+path)
			}
		}
	}
	return []Anomaly{a}
}

// holdsHistory turns ops into porcupine's operations. An operation whose
// outcome is unknown may land any time until the history's end: a stopped
// instance, or a request still queued when its client gave up, can take
// effect after the client stopped waiting.
func holdsHistory(ops []holdOp) []porcupine.Operation {
	var end int64
	for _, op := range ops {
		end = max(end, op.ret)
	}
	hist := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		ret := op.ret
		if op.outcome == "unknown" {
			ret = end + 1
		}
		hist[i] = porcupine.Operation{ClientId: op.client, Input: op, Call: op.call, Return: ret}
	}
	return hist
}

// unexplainedKey returns, one line each, the operations of the first key
// whose history alone is not linearizable, with times relative to its first
// call, so that a failed run's log says what happened without its files.
func unexplainedKey(model porcupine.Model, hist []porcupine.Operation) []string {
	for _, part := range model.Partition(hist) {
		if porcupine.CheckOperations(model, part) {
			continue
		}
		t0 := part[0].Call
		for _, op := range part {
			t0 = min(t0, op.Call)
		}
		lines := make([]string, 0, len(part))
		for _, op := range part {
			h := op.Input.(holdOp)
			lines = append(lines, fmt.Sprintf("client %d, %v to %v: %s, expires %s", op.ClientId,
				time.Duration(op.Call-t0), time.Duration(op.Return-t0), model.DescribeOperation(h, nil), time.Unix(0, h.expires).Format("15:04:05.000")))
		}
		return lines
	}
	return nil
}
