package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/plantstore/plantstore/internal/plant"
)

// Linearizability, as Jepsen checks it: concurrent callers create, read,
// delete and list plants on a few contended ids, every operation is recorded
// with the time it was called and the time it was answered, and each id's
// history is checked with porcupine against a sequential model of the
// contract. The history is linearizable when every operation can be placed
// at one instant between its call and its answer such that, in that order,
// each answer is the one the model gives. An acknowledged plant replaced by
// another, a deleted plant read again, or a read of a plant before its
// create was called all fail, where counting the ids still readable at the
// end sees none of them.

// OpKind is what an operation asks.
type OpKind uint8

const (
	OpCreate OpKind = iota // POST /plants
	OpRead                 // GET /plants/{id}
	OpDelete               // DELETE /plants/{id}
	OpList                 // GET /plants: recorded as one read of each contended id
)

func (k OpKind) String() string {
	return [...]string{"create", "read", "delete", "list"}[k]
}

// Input is one operation as called.
type Input struct {
	Kind  OpKind
	ID    int64       // not for OpList
	Plant plant.Plant // OpCreate: the plant sent
}

// Result is an answer as the model tells answers apart.
type Result uint8

const (
	// Indeterminate: a 503, a timeout, a lost connection. The operation may
	// have taken effect or not, at any time after its call: it is checked as
	// one that has not returned yet (porcupine's crashed operation).
	Indeterminate Result = iota
	Created              // create: 200, and the store says it created the plant
	Replayed             // create: 200, the same plant was already stored
	Stored               // create: 200, created or replayed (all HTTP says)
	Conflict             // create: 409, another plant holds the id
	Found                // read: the plant, in Output.Plant
	NotFound             // read or delete: 404
	Deleted              // delete: 204
)

func (r Result) String() string {
	return [...]string{"?", "created", "replayed", "200", "409", "found", "404", "204"}[r]
}

// Output is one operation's answer.
type Output struct {
	Result Result
	// Plant: for Found the plant read; for Conflict the plant that holds
	// the id when the caller was told (PlantKnown), else unchecked.
	Plant      plant.Plant
	PlantKnown bool
	// Page: for OpList, the contended plants the listing returned, and
	// whether it was complete (one page, nothing after it). An incomplete or
	// failed listing records nothing.
	Page map[int64]plant.Plant
	// Unexpected: an answer the contract does not allow (a 500, a body that
	// does not parse, an error that is not the store's unavailability). It
	// is recorded as Indeterminate and fails the check.
	Unexpected string
}

// Caller is one client of the store under test: a repository, or a service
// over HTTP. Do performs one operation and says how it was answered; it must
// return within the context's deadline.
type Caller interface {
	Do(ctx context.Context, in Input) Output
}

// RepositoryCaller calls a repository directly.
func RepositoryCaller(r Repository) Caller { return repoCaller{r} }

type repoCaller struct{ r Repository }

func (c repoCaller) Do(ctx context.Context, in Input) Output {
	switch in.Kind {
	case OpCreate:
		got, outcome, err := c.r.Create(ctx, in.Plant)
		switch {
		case errors.Is(err, plant.ErrConflict):
			return Output{Result: Conflict, Plant: got, PlantKnown: true}
		case err != nil:
			return failed(err)
		case outcome == plant.Created:
			return Output{Result: Created}
		}
		return Output{Result: Replayed}
	case OpRead:
		got, err := c.r.Get(ctx, in.ID)
		switch {
		case errors.Is(err, plant.ErrNotFound):
			return Output{Result: NotFound}
		case err != nil:
			return failed(err)
		}
		return Output{Result: Found, Plant: got}
	case OpDelete:
		err := c.r.Delete(ctx, in.ID)
		switch {
		case errors.Is(err, plant.ErrNotFound):
			return Output{Result: NotFound}
		case err != nil:
			return failed(err)
		}
		return Output{Result: Deleted}
	}
	page, err := c.r.List(ctx, nil, plant.MaxPageLimit)
	if err != nil {
		return failed(err)
	}
	out := Output{Result: Found, Page: map[int64]plant.Plant{}}
	if page.More {
		return Output{} // more plants than one page: no complete view
	}
	for _, p := range page.Plants {
		out.Page[p.ID] = p
	}
	return out
}

// failed is the answer of a store error: the store's unavailability is
// indeterminate, anything else unexpected.
func failed(err error) Output {
	if errors.Is(err, plant.ErrUnavailable) {
		return Output{}
	}
	return Output{Unexpected: err.Error()}
}

// ContendOptions shape a contended workload.
type ContendOptions struct {
	// Callers each run one client, one operation at a time: several callers
	// may share a repository or a service process.
	Callers []Caller
	// IDs: the contended ids are 1..IDs; Plants: the plants each id's
	// creates choose from (same id, different names).
	IDs, Plants int
	// Ops per caller, and at most Duration in all (zero: no bound).
	Ops      int
	Duration time.Duration
	// Pause between a caller's operations.
	Pause time.Duration
	// Timeout of one operation: past it, it is indeterminate.
	Timeout time.Duration
	// History records the operations (nil: a new one, NewLinear).
	History *Linear
}

// ContendedPlant is the k-th plant (0-based) the workload creates under id.
func ContendedPlant(id int64, k int) plant.Plant {
	p := plant.Plant{ID: id, Name: fmt.Sprintf("contended %d/%d", id, k)}
	if k%2 == 1 {
		p.Tag = ptr(fmt.Sprint("t", k))
	}
	return p
}

// Contend runs the workload and returns its history: each caller picks at
// random among creates (40%), reads (30%), deletes (20%) and listings
// (10%) on random contended ids.
func Contend(ctx context.Context, o ContendOptions) *Linear {
	h := o.History
	if h == nil {
		h = NewLinear(o.IDs)
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	var wg sync.WaitGroup
	for client, caller := range o.Callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(client), uint64(time.Now().UnixNano())))
			for n := 0; (o.Ops == 0 || n < o.Ops) && ctx.Err() == nil; n++ {
				id := 1 + rng.Int64N(int64(o.IDs))
				var in Input
				switch x := rng.IntN(10); {
				case x < 4:
					in = Input{Kind: OpCreate, ID: id, Plant: ContendedPlant(id, rng.IntN(o.Plants))}
				case x < 7:
					in = Input{Kind: OpRead, ID: id}
				case x < 9:
					in = Input{Kind: OpDelete, ID: id}
				default:
					in = Input{Kind: OpList}
				}
				opCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
				call := h.now()
				out := caller.Do(opCtx, in)
				ret := h.now()
				cancel()
				h.Record(client, in, call, out, ret)
				if o.Pause > 0 {
					time.Sleep(o.Pause)
				}
			}
		})
	}
	wg.Wait()
	return h
}

// Linear is a recorded history of operations on contended ids, for
// CheckLinearizable. Record is safe for concurrent use.
type Linear struct {
	ids   int
	start time.Time

	mu         sync.Mutex
	ops        []porcupine.Operation
	unexpected []string
}

// NewLinear returns an empty history whose listings are read for ids 1..ids.
func NewLinear(ids int) *Linear { return &Linear{ids: ids, start: time.Now()} }

// NewWallLinear is NewLinear timed by the wall clock (Unix nanoseconds), so
// that the histories of processes on one machine (the pods of a test
// cluster) merge into one (Events, AddEvents).
func NewWallLinear(ids int) *Linear { return &Linear{ids: ids, start: time.Unix(0, 0)} }

// Event is one recorded operation as it travels between processes (JSON).
// Return is math.MaxInt64 for an operation that never returned.
type Event struct {
	Client       int
	Input        Input
	Output       Output
	Call, Return int64
}

// Events are the history's operations, a listing as its reads.
func (h *Linear) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	events := make([]Event, len(h.ops))
	for i, op := range h.ops {
		events[i] = Event{Client: op.ClientId, Input: op.Input.(Input), Output: op.Output.(Output), Call: op.Call, Return: op.Return}
	}
	return events
}

// AddEvents adds another process's events, its clients numbered from
// clientBase so that they stay apart from this history's; unexpected
// answers are added as such.
func (h *Linear) AddEvents(events []Event, clientBase int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		if e.Output.Unexpected != "" {
			h.unexpected = append(h.unexpected, fmt.Sprintf("%s %d: %s", e.Input.Kind, e.Input.ID, e.Output.Unexpected))
			e.Output = Output{}
		}
		h.ops = append(h.ops, porcupine.Operation{ClientId: clientBase + e.Client, Input: e.Input, Call: e.Call, Output: e.Output, Return: e.Return})
	}
}

// now is the history's clock: monotonic nanoseconds since it began.
func (h *Linear) now() int64 { return int64(time.Since(h.start)) }

// Record adds one operation of client, called and answered at call and ret
// (the history's clock). An indeterminate create or delete is recorded as not
// returned yet, an indeterminate read not at all; a listing as a read of each
// contended id.
func (h *Linear) Record(client int, in Input, call int64, out Output, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.Unexpected != "" {
		h.unexpected = append(h.unexpected, fmt.Sprintf("%s %d: %s", in.Kind, in.ID, out.Unexpected))
		out = Output{}
	}
	if out.Result == Indeterminate && in.Kind == OpRead {
		return // it observed nothing and changed nothing: it only widens the search
	}
	if out.Result == Indeterminate {
		ret = math.MaxInt64
	}
	if in.Kind != OpList {
		h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
		return
	}
	if out.Page == nil {
		return // failed or incomplete: it observed nothing for sure
	}
	for id := int64(1); id <= int64(h.ids); id++ {
		read := Output{Result: NotFound}
		if p, ok := out.Page[id]; ok {
			read = Output{Result: Found, Plant: p}
		}
		h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: Input{Kind: OpList, ID: id}, Call: call, Output: read, Return: ret})
	}
}

// Verdict is what CheckLinearizable found.
type Verdict struct {
	Ops, Indeterminate int
	IDs, Linearizable  int
	// Illegal: the ids whose histories are not linearizable; Undecided: the
	// ids the checker gave up on within its time.
	Illegal, Undecided []int64
	Unexpected         []string
	// Visualizations: an HTML file per illegal id, porcupine's picture of
	// the longest linearizable prefix.
	Visualizations []string
}

func (v Verdict) String() string {
	s := fmt.Sprintf("%d operations (%d indeterminate) on %d ids: %d of %d linearizable",
		v.Ops, v.Indeterminate, v.IDs, v.Linearizable, v.IDs)
	if len(v.Illegal) > 0 {
		s += fmt.Sprintf("; not linearizable: %v", v.Illegal)
	}
	if len(v.Undecided) > 0 {
		s += fmt.Sprintf("; undecided: %v", v.Undecided)
	}
	if len(v.Unexpected) > 0 {
		s += fmt.Sprintf("; %d unexpected answers, the first: %s", len(v.Unexpected), v.Unexpected[0])
	}
	return s
}

// OK: every id's history is linearizable and every answer was one the
// contract allows.
func (v Verdict) OK() bool {
	return v.Linearizable == v.IDs && len(v.Unexpected) == 0
}

// Check checks each id's history on its own (an id's plants never depend on
// another's), giving porcupine at most timeout for each. With visualize, an
// illegal id's picture is written beside the test's other output (os.TempDir),
// or, when visualize is an absolute path, to that path and -id<N>.html, with
// the id's operations beside it (-id<N>.json, the failing sub-history).
func (h *Linear) Check(timeout time.Duration, visualize string) Verdict {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := Verdict{Ops: len(h.ops), Unexpected: slices.Clone(h.unexpected)}
	byID := map[int64][]porcupine.Operation{}
	for _, op := range h.ops {
		id := op.Input.(Input).ID
		byID[id] = append(byID[id], op)
		if op.Return == math.MaxInt64 {
			v.Indeterminate++
		}
	}
	ids := make([]int64, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	v.IDs = len(ids)
	for _, id := range ids {
		res, info := porcupine.CheckOperationsVerbose(Model, byID[id], timeout)
		switch res {
		case porcupine.Ok:
			v.Linearizable++
		case porcupine.Illegal:
			v.Illegal = append(v.Illegal, id)
			if visualize != "" {
				prefix := visualize
				if !filepath.IsAbs(prefix) {
					prefix = filepath.Join(os.TempDir(), "plantstore-linearizability-"+visualize)
				}
				path := fmt.Sprintf("%s-id%d.html", prefix, id)
				if err := porcupine.VisualizePath(Model, info, path); err == nil {
					v.Visualizations = append(v.Visualizations, path)
				}
				if filepath.IsAbs(visualize) {
					writeOps(fmt.Sprintf("%s-id%d.json", prefix, id), byID[id])
				}
			}
		default:
			v.Undecided = append(v.Undecided, id)
		}
	}
	return v
}

// CheckLinearizable fails t unless h is linearizable, and returns the verdict.
func CheckLinearizable(t testing.TB, h *Linear) Verdict {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_")
	v := h.Check(time.Minute, name)
	if !v.OK() {
		t.Errorf("history not linearizable: %v", v)
		for _, path := range v.Visualizations {
			t.Logf("porcupine's picture: %s", path)
		}
	}
	if why := v.TooLittle(h.ids); why != "" {
		t.Errorf("the history proves too little: %s (%v)", why, v)
	}
	return v
}

// TooLittle says why a verdict on ids contended ids proves nothing, or "":
// an indeterminate answer fits any history, so a history of a store that
// answered 503 throughout is linearizable, and one that never touched an id
// says nothing of it. The histories here come from healthy stores, where
// almost every answer is determinate: at most 1 in 100 may not be.
func (v Verdict) TooLittle(ids int) string {
	switch {
	case v.IDs < ids:
		return fmt.Sprintf("operations on %d of the %d contended ids", v.IDs, ids)
	case v.Indeterminate*100 > v.Ops:
		return fmt.Sprintf("%d of %d answers indeterminate, more than 1 in 100", v.Indeterminate, v.Ops)
	}
	return ""
}

// state is one id's state in the model: absent, or the plant it holds.
// Comparable, so porcupine's default equality and its cache work.
type state struct {
	present, hasTag bool
	name, tag       string
}

func stateOf(p plant.Plant) state {
	s := state{present: true, name: p.Name}
	if p.Tag != nil {
		s.hasTag, s.tag = true, *p.Tag
	}
	return s
}

func (s state) String() string {
	switch {
	case !s.present:
		return "absent"
	case s.hasTag:
		return fmt.Sprintf("%q tag %q", s.name, s.tag)
	}
	return fmt.Sprintf("%q", s.name)
}

// Model is the contract for one id, sequentially: a create stores its plant
// on an absent id (200), replays on the same plant (200) and conflicts with
// another (409); a read answers the plant or 404; a delete removes it (204)
// or answers 404. An indeterminate answer allows the operation's effect, and
// since it counts as not yet returned, its absence too.
var Model = porcupine.Model{
	Init: func() any { return state{} },
	Step: func(st, input, output any) (bool, any) {
		s, in, out := st.(state), input.(Input), output.(Output)
		switch in.Kind {
		case OpCreate:
			sent := stateOf(in.Plant)
			switch out.Result {
			case Indeterminate:
				if !s.present {
					return true, sent
				}
				return true, s
			case Created:
				return !s.present, sent
			case Replayed:
				return s == sent, s
			case Stored:
				return !s.present || s == sent, sent
			case Conflict:
				return s.present && s != sent && (!out.PlantKnown || s == stateOf(out.Plant)), s
			}
		case OpRead, OpList:
			switch out.Result {
			case Indeterminate:
				return true, s
			case Found:
				return s == stateOf(out.Plant), s
			case NotFound:
				return !s.present, s
			}
		case OpDelete:
			switch out.Result {
			case Indeterminate:
				return true, state{}
			case Deleted:
				return s.present, state{}
			case NotFound:
				return !s.present, s
			}
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		switch {
		case in.Kind == OpCreate:
			return fmt.Sprintf("create %v → %v", stateOf(in.Plant), out.Result)
		case out.Result == Found:
			return fmt.Sprintf("%v → %v", in.Kind, stateOf(out.Plant))
		}
		return fmt.Sprintf("%v → %v", in.Kind, out.Result)
	},
	DescribeState: func(st any) string { return strings.TrimSpace(st.(state).String()) },
}

// writeOps writes operations as JSON events, best effort (the file is
// evidence beside a verdict that stands without it).
func writeOps(path string, ops []porcupine.Operation) {
	events := make([]Event, len(ops))
	for i, op := range ops {
		events[i] = Event{Client: op.ClientId, Input: op.Input.(Input), Output: op.Output.(Output), Call: op.Call, Return: op.Return}
	}
	if b, err := json.Marshal(events); err == nil {
		_ = os.WriteFile(path, b, 0o644)
	}
}
