package store

import (
	"context"
	"testing"

	"github.com/plantstore/plantstore/internal/redistest"
)

// TestDelIfScript: the migration deletes a 1.0.0 key only while it holds the
// value it moved, never a plant a 1.0.0 pod wrote there since.
func TestDelIfScript(t *testing.T) {
	c := redistest.Start(t).Client()
	ctx := context.Background()
	if err := c.Set(ctx, "plant:{1}", `{"name":"written again"}`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := delIfScript.Run(ctx, c, []string{"plant:{1}"}, `{"name":"moved"}`).Int(); err != nil || n != 0 {
		t.Fatalf("delete of another value = %d, %v; want 0", n, err)
	}
	if v := c.Get(ctx, "plant:{1}").Val(); v != `{"name":"written again"}` {
		t.Fatalf("the key holds %q after a refused delete", v)
	}
	if n, err := delIfScript.Run(ctx, c, []string{"plant:{1}"}, `{"name":"written again"}`).Int(); err != nil || n != 1 {
		t.Fatalf("delete of the value held = %d, %v; want 1", n, err)
	}
	if n := c.Exists(ctx, "plant:{1}").Val(); n != 0 {
		t.Fatal("the key is still there")
	}
}
