package store

import (
	"context"
	"errors"
	"testing"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/redistest"
)

// TestClassifyRealReplies: the error replies a real Redis gives while it
// fails over are unavailable (503, retry), others are not. A promoted replica
// lacks the scripts, and a create whose script reload failed mid-failover
// reported NOSCRIPT as a 500 before it was listed here (seen in CI's Sentinel
// chaos run).
func TestClassifyRealReplies(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := context.Background()
	replies := []struct {
		what        string
		err         error
		unavailable bool
	}{
		{"NOSCRIPT", c.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err(), true},
		{"unknown command", c.Do(ctx, "nosuchcommand").Err(), false},
		{"wrong type", func() error { c.Set(ctx, "s", "v", 0); return c.LPush(ctx, "s", "x").Err() }(), false},
	}
	for _, r := range replies {
		if r.err == nil {
			t.Fatalf("%s: Redis answered no error", r.what)
		}
		if got := errors.Is(classify(r.err), plant.ErrUnavailable); got != r.unavailable {
			t.Errorf("classify(%q) unavailable = %v, want %v", r.err, got, r.unavailable)
		}
	}
}
