package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/plantstore/plantstore/internal/servicetest"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

// The history mode (-history) and its checker (-check): Jepsen's way of
// judging a store under faults. Callers create, read, delete and list plants
// on a few contended ids, every operation recorded with the wall-clock times
// of its call and its answer (the pods of the test cluster share this
// machine's clock), so that the histories of pods in different zones merge
// into one; -check merges them and checks each id's history for
// linearizability with porcupine (internal/store/storetest).

// History is what a -history run prints, one JSON line.
type History struct {
	Events []storetest.Event
	Ops    int                       // operations run
	ByKind map[string]map[string]int // outcomes by kind: "create" → "200", "409", "?"...
}

// runHistory runs callers callers for duration against url, each pausing
// pause between operations on ids ids.
func runHistory(ctx context.Context, o options, callers, ids int, pause time.Duration) History {
	h := storetest.NewWallLinear(ids)
	service := &servicetest.Service{API: o.url, Token: o.token}
	cs := make([]storetest.Caller, callers)
	for i := range cs {
		cs[i] = service.Caller()
	}
	storetest.Contend(ctx, storetest.ContendOptions{
		Callers: cs, IDs: ids, Plants: 3, Pause: pause, Timeout: o.timeout, Duration: o.duration, History: h,
	})
	out := History{Events: h.Events(), ByKind: map[string]map[string]int{}}
	for _, e := range out.Events {
		kind := e.Input.Kind.String()
		if out.ByKind[kind] == nil {
			out.ByKind[kind] = map[string]int{}
		}
		out.ByKind[kind][e.Output.Result.String()]++
	}
	out.Ops = len(out.Events)
	return out
}

// Verdict is what -check prints, one JSON line.
type Verdict struct {
	Linearizable   bool
	Summary        string
	Ops            int
	Indeterminate  int
	Illegal        []int64
	Undecided      []int64
	Unexpected     []string
	Visualizations []string
}

// check merges the histories in files (each the last line of a -history
// run's output) and checks them; an illegal id's picture and operations go
// to visualize (an absolute path prefix).
func check(files []string, ids int, timeout time.Duration, visualize string) (Verdict, error) {
	h := storetest.NewWallLinear(ids)
	for i, f := range files {
		hist, err := readHistory(f)
		if err != nil {
			return Verdict{}, fmt.Errorf("%s: %w", f, err)
		}
		h.AddEvents(hist.Events, i*1000)
	}
	abs, err := filepath.Abs(visualize)
	if err != nil {
		return Verdict{}, err
	}
	v := h.Check(timeout, abs)
	return Verdict{Linearizable: v.OK(), Summary: v.String(), Ops: v.Ops, Indeterminate: v.Indeterminate,
		Illegal: v.Illegal, Undecided: v.Undecided, Unexpected: v.Unexpected, Visualizations: v.Visualizations}, nil
}

// readHistory reads the last line of a -history run's output.
func readHistory(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, err
	}
	defer f.Close()
	var last []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			last = append(last[:0], sc.Bytes()...)
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return History{}, err
	}
	var hist History
	if err := json.Unmarshal(last, &hist); err != nil {
		return History{}, fmt.Errorf("its last line is no history: %w", err)
	}
	return hist, nil
}
