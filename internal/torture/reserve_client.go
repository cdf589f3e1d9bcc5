package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"time"

	"github.com/stampede-lab/stampede/internal/catalog"
)

// reserveHistory is what the clients did: the operations on holds for
// porcupine, counts by kind and outcome, and the anomalies seen in single
// answers.
type reserveHistory struct {
	mu        sync.Mutex
	ops       []holdOp
	counts    map[string]int
	anomalies []Anomaly
	refusals  []refusal
}

// refusal is a reservation answered 409 (insufficient stock, fenced): the
// answer says that nothing was reserved under its key.
type refusal struct {
	key, problem string
	api          int   // the instance that answered, from 1
	call, ret    int64 // Unix ns
	// takenAt is when the warehouse applied the key's take, if it had when
	// the answer came (taken).
	takenAt time.Time
	taken   bool
}

func (h *reserveHistory) refusal(r refusal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refusals = append(h.refusals, r)
}

// opsOf returns the operations on key, one line each, with times relative
// to start, for an anomaly's excerpt.
func (h *reserveHistory) opsOf(key string, start time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, op := range h.ops {
		if op.key == key {
			out = append(out, fmt.Sprintf("client %d, API %d, %v to %v: %s %s → %s %s (id %d)", op.client, op.api,
				time.Duration(op.call-start.UnixNano()).Round(time.Millisecond), time.Duration(op.ret-start.UnixNano()).Round(time.Millisecond),
				op.kind, op.key, op.outcome, op.status, op.id))
		}
	}
	return out
}

func (h *reserveHistory) record(op holdOp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	h.count(op.kind + "_" + op.outcome)
}

// count adds one to a counter; h.mu must be held.
func (h *reserveHistory) count(name string) {
	if h.counts == nil {
		h.counts = map[string]int{}
	}
	h.counts[name]++
}

func (h *reserveHistory) add(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count(name)
}

func (h *reserveHistory) anomaly(a Anomaly) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.anomalies = append(h.anomalies, a)
}

// noAnswerPause is how long a client waits after a request that got no
// answer at all before its next one, as a client retrying a dead instance
// would.
const noAnswerPause = 50 * time.Millisecond

// hold is a reservation a client asked for: its key, and what it learned.
type hold struct {
	key     string
	product int64
	units   int
	id      int64
	known   bool // an answer said it exists
	ended   bool // a cancel was answered, or a read said it ended
	refused bool // the last answer was a 409: nothing was reserved
}

// reserveClient sends requests to the API instances until its context
// ends: new reservations, retries of those whose outcome it did not learn,
// replays, cancels and reads of its own, stocktakes. A tenth of its
// reservations and cancels hang up: after the request was sent, or 0.3 to
// 10 ms after it began.
type reserveClient struct {
	id     int
	r      *rand.Rand
	cfg    ReserveConfig
	apis   []*apiProcess
	hc     *http.Client
	h      *reserveHistory
	holds  []*hold
	seq    int
	base   string
	hangUp bool
	// takenAt, if set, looks up when the warehouse applied the take of
	// an idempotency key (false: it has not).
	takenAt func(key string) (time.Time, bool)
}

func (c *reserveClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		c.base = c.apis[c.r.IntN(len(c.apis))].URL()
		c.hangUp = c.r.IntN(10) == 0
		switch p := c.r.IntN(100); {
		case p < 40 || len(c.holds) == 0:
			c.seq++
			hd := &hold{key: fmt.Sprintf("c%d-%d", c.id, c.seq), product: int64(1 + c.r.IntN(c.cfg.Products)), units: 1 + c.r.IntN(3)}
			c.holds = append(c.holds, hd)
			c.reserve(ctx, hd)
		case p < 55:
			c.reserve(ctx, c.holds[c.r.IntN(len(c.holds))]) // a retry, or a replay
		case p < 75:
			if hd := c.pick(); hd != nil {
				c.cancel(hd)
			}
		case p < 95:
			if hd := c.pick(); hd != nil {
				c.read(hd)
			}
		default:
			c.stocktake(int64(1 + c.r.IntN(c.cfg.Products)))
		}
	}
}

// pick returns one of the client's known holds not yet ended, or nil.
func (c *reserveClient) pick() *hold {
	var live []*hold
	for _, hd := range c.holds {
		if hd.known && !hd.ended {
			live = append(live, hd)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[c.r.IntN(len(live))]
}

// answer is what an API call answered: its status (0 when none arrived)
// and the fields of a reservation or a problem it held.
type answer struct {
	code      int
	ID        int64     `json:"id"`
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expires_at"`
	Type      string    `json:"type"`
}

// call sends a request, hanging up as the client decided, and decodes the
// answer.
func (c *reserveClient) call(method, url, body string) answer {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.hangUp {
		c.h.add("hang_ups")
		if c.r.IntN(2) == 0 {
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { cancel() }})
		} else {
			t := time.AfterFunc(time.Duration(300+c.r.IntN(9700))*time.Microsecond, cancel)
			defer t.Stop()
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
	if err != nil {
		return answer{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			time.Sleep(noAnswerPause) // the instance is down or stopped: do not spin
		}
		return answer{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}
	}
	a := answer{code: resp.StatusCode}
	_ = json.Unmarshal(b, &a)
	if a.code == http.StatusInternalServerError {
		c.h.anomaly(Anomaly{Check: checkNo500Name, Detail: fmt.Sprintf("%s %s answered 500: %s", method, url, b)})
	}
	return a
}

// reserve asks for hd's reservation on c.base; an answer of 503 that is not
// busy ("retry the same request") is retried at once with the same key on
// the other instance, up to maxRetries times while ctx lasts, as a client
// behind a load balancer would.
func (c *reserveClient) reserve(ctx context.Context, hd *hold) {
	for range maxRetries {
		if !c.reserveOnce(hd) || ctx.Err() != nil {
			return
		}
		c.base, c.hangUp = c.other(c.base), false
		c.h.add("reserve_retried_elsewhere")
	}
	c.reserveOnce(hd)
}

// maxRetries is how many times a client retries a 503 at once.
const maxRetries = 3

// api is the instance c.base names, from 1.
func (c *reserveClient) api() int {
	for i, p := range c.apis {
		if p.URL() == c.base {
			return i + 1
		}
	}
	return 0
}

// other returns the URL of another instance than base.
func (c *reserveClient) other(base string) string {
	for _, p := range c.apis {
		if p.URL() != base {
			return p.URL()
		}
	}
	return base
}

// reserveOnce sends one request for hd's reservation, records it, and
// reports whether it was answered 503 "retry" (not busy).
func (c *reserveClient) reserveOnce(hd *hold) (retry bool) {
	op := holdOp{client: c.id, key: hd.key, kind: "reserve", api: c.api(), call: time.Now().UnixNano()}
	a := c.call(http.MethodPost, c.base+"/v1/reservations",
		fmt.Sprintf(`{"product_id": %d, "quantity": %d, "idempotency_key": %q}`, hd.product, hd.units, hd.key))
	op.ret = time.Now().UnixNano()
	hd.refused = false
	switch {
	case a.code == http.StatusCreated || a.code == http.StatusOK:
		op.outcome, op.id, op.status, op.expires = "replayed", a.ID, a.Status, a.ExpiresAt.UnixNano()
		if a.code == http.StatusCreated {
			op.outcome = "created"
		}
		if hd.known && (a.ID != hd.id || a.code == http.StatusCreated) {
			c.h.anomaly(Anomaly{Check: checkReplayName, Detail: fmt.Sprintf("key %q of reservation %d answered %d with reservation %d", hd.key, hd.id, a.code, a.ID)})
		}
		hd.id, hd.known = a.ID, true
		hd.ended = hd.ended || a.Status != catalog.StatusActive
	case a.code == http.StatusConflict:
		op.outcome, op.status, hd.refused = "refused", a.Type, true
		c.h.refusal(c.refused(hd, a.Type, op))
	case a.code == http.StatusServiceUnavailable && a.Type == "/problems/busy":
		op.outcome, op.status = "refused", a.Type
	case a.code == http.StatusUnprocessableEntity:
		c.h.anomaly(Anomaly{Check: checkReplayName, Detail: fmt.Sprintf("key %q, always sent with %d of product %d, answered 422", hd.key, hd.units, hd.product)})
		op.outcome = "unknown"
	default:
		op.outcome = "unknown" // hung up, cut off, 503 unknown
	}
	c.h.record(op)
	return a.code == http.StatusServiceUnavailable && a.Type != "/problems/busy"
}

// refused is the record of a 409 to hd's key answered as op: with when the
// key's take was applied, if it was when the answer came (looked up at
// once: a stocktake may void an orphaned take before the run is at rest).
func (c *reserveClient) refused(hd *hold, problem string, op holdOp) refusal {
	r := refusal{key: hd.key, problem: problem, api: op.api, call: op.call, ret: op.ret}
	if c.takenAt != nil {
		r.takenAt, r.taken = c.takenAt(hd.key)
	}
	return r
}

func (c *reserveClient) cancel(hd *hold) {
	op := holdOp{client: c.id, key: hd.key, kind: "cancel", id: hd.id, api: c.api(), call: time.Now().UnixNano()}
	a := c.call(http.MethodPost, c.base+"/v1/reservations/"+strconv.FormatInt(hd.id, 10)+"/cancel", "")
	op.ret = time.Now().UnixNano()
	switch a.code {
	case http.StatusOK:
		op.outcome, op.status = "done", a.Status
		hd.ended = true
	case http.StatusNotFound:
		op.outcome = "missing"
	default:
		op.outcome = "unknown"
	}
	c.h.record(op)
}

func (c *reserveClient) read(hd *hold) {
	op := holdOp{client: c.id, key: hd.key, kind: "read", id: hd.id, api: c.api(), call: time.Now().UnixNano()}
	hangUp := c.hangUp
	c.hangUp = false // a read that hangs up says nothing
	a := c.call(http.MethodGet, c.base+"/v1/reservations/"+strconv.FormatInt(hd.id, 10), "")
	c.hangUp = hangUp
	op.ret = time.Now().UnixNano()
	switch a.code {
	case http.StatusOK:
		op.outcome, op.status = "done", a.Status
		hd.ended = a.Status != catalog.StatusActive
	case http.StatusNotFound:
		op.outcome = "missing"
	default:
		return
	}
	c.h.record(op)
}

// stocktake recounts a product at its stock, as an operator would: it sets
// both stores at once and must leave every unit in one place.
func (c *reserveClient) stocktake(product int64) {
	c.hangUp = false
	a := c.call(http.MethodPut, c.base+"/admin/inventory/"+strconv.FormatInt(product, 10), fmt.Sprintf(`{"stock": %d}`, c.cfg.Stock))
	if a.code == http.StatusOK {
		c.h.add("stocktake_done")
	} else {
		c.h.add("stocktake_failed")
	}
}

// settle retries, once the faults are over and without hanging up, every
// reservation whose outcome the client never learned, as a careful client
// would; the model checks these answers too. Holds it knows of may stay:
// at rest a held unit is in its place. A key last answered 409 is not
// retried: the answer said nothing was reserved, so a unit its take holds
// stays orphaned for the checks at rest to find.
func (c *reserveClient) settle() {
	c.hangUp = false
	for _, hd := range c.holds {
		if !hd.known && !hd.refused {
			c.base = c.apis[c.r.IntN(len(c.apis))].URL()
			c.reserve(context.Background(), hd)
		}
	}
}
