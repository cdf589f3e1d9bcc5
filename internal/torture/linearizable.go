package torture

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// stockModel is a product's free units as a register that reservations take
// from and cancels give back to. An operation whose outcome the client did
// not learn may have happened or not.
func stockModel(initial int) porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byProduct := map[int64][]porcupine.Operation{}
			var order []int64
			for _, op := range h {
				p := op.Input.(stockOp).product
				if _, ok := byProduct[p]; !ok {
					order = append(order, p)
				}
				byProduct[p] = append(byProduct[p], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, p := range order {
				out = append(out, byProduct[p])
			}
			return out
		},
		Init: func() []any { return []any{initial} },
		Step: func(state, input, _ any) []any {
			s, op := state.(int), input.(stockOp)
			switch op.kind {
			case "read":
				if op.seen == s {
					return []any{s}
				}
				return nil
			case "cancel":
				if op.outcome == "done" {
					return []any{s + op.units}
				}
				return []any{s, s + op.units}
			}
			switch op.outcome {
			case "done":
				if s >= op.units {
					return []any{s - op.units}
				}
				return nil
			case "refused":
				if s < op.units {
					return []any{s}
				}
				return nil
			case "noop":
				return []any{s}
			}
			if s >= op.units {
				return []any{s, s - op.units}
			}
			return []any{s}
		},
		DescribeOperation: func(input, _ any) string {
			op := input.(stockOp)
			if op.kind == "read" {
				return fmt.Sprintf("read → %d", op.seen)
			}
			return fmt.Sprintf("%s %d → %s", op.kind, op.units, op.outcome)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%d free", state.(int)) },
	}).ToModel()
}

// checkLinearizable checks each product's history against stockModel and,
// when one is not linearizable, writes porcupine's visualisation to
// outDir/linearizability.html.
func (h *reserveHistory) checkLinearizable(outDir string, initial int) []Anomaly {
	h.mu.Lock()
	ops := make([]porcupine.Operation, len(h.ops))
	for i, op := range h.ops {
		ops[i] = porcupine.Operation{ClientId: op.client, Input: op, Call: op.call, Output: nil, Return: op.return_}
	}
	h.mu.Unlock()
	model := stockModel(initial)
	res, info := porcupine.CheckOperationsVerbose(model, ops, time.Minute)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return []Anomaly{{Check: "free units linearizable per product", Detail: "the check ran out of its minute: no verdict"}}
	}
	a := Anomaly{Check: "free units linearizable per product",
		Detail: fmt.Sprintf("the history of %d operations is not linearizable: the units cannot be explained by any order of the operations", len(ops))}
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
