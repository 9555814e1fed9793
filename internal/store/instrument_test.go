package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/store"
)

// failing is a Backend whose every operation fails with err.
type failing struct{ err error }

func (f failing) Create(context.Context, plant.Plant) (plant.Plant, plant.Outcome, error) {
	return plant.Plant{}, 0, f.err
}
func (f failing) Get(context.Context, int64) (plant.Plant, error)       { return plant.Plant{}, f.err }
func (f failing) Delete(context.Context, int64) error                   { return f.err }
func (f failing) List(context.Context, *int64, int) (plant.Page, error) { return plant.Page{}, f.err }
func (f failing) Ping(context.Context) error                            { return f.err }

// TestInstrumentOutcomes checks the outcome label of each kind of result,
// ErrNotReplicated apart from other unavailability.
func TestInstrumentOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{fmt.Errorf("id 1: %w", plant.ErrConflict), "ok"},
		{fmt.Errorf("id 1: %w", plant.ErrNotFound), "ok"},
		{fmt.Errorf("%w: dial: refused", plant.ErrUnavailable), "unavailable"},
		{fmt.Errorf("%w: 0 of 1 replicas: %w", plant.ErrUnavailable, store.ErrNotReplicated), "unreplicated"},
		{errors.New("WRONGTYPE"), "error"},
	} {
		reg := prometheus.NewRegistry()
		i, err := store.Instrument(failing{tc.err}, reg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		_, _, _ = i.Create(ctx, plant.Plant{ID: 1, Name: "x"})
		_, _ = i.Get(ctx, 1)
		_ = i.Delete(ctx, 1)
		_, _ = i.List(ctx, nil, 20)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for _, mf := range families {
			for _, m := range mf.GetMetric() {
				got[label(m, "operation")+"/"+label(m, "outcome")] = m.GetHistogram().GetSampleCount()
			}
		}
		for _, op := range []string{"create", "get", "delete", "list"} {
			if got[op+"/"+tc.want] != 1 {
				t.Errorf("%v: counts %v, want one %s/%s", tc.err, got, op, tc.want)
			}
		}
		if _, ok := got["create/unreplicated"]; !ok {
			t.Errorf("no create/unreplicated series from the start: %v", got)
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
