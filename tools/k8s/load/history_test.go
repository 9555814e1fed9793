package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/store/storetest"
)

// TestCheckMergesHistories: histories of two processes merge into one, so a
// read in one that contradicts a create acknowledged in the other before it
// is found, with the id's picture and operations left behind; the same
// histories without the contradiction are linearizable.
func TestCheckMergesHistories(t *testing.T) {
	dir := t.TempDir()
	p := storetest.ContendedPlant(1, 0)
	write := func(name string, events ...storetest.Event) string {
		b, err := json.Marshal(History{Events: events, Ops: len(events)})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, append([]byte("a line before\n"), b...), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	create := write("zone-a", storetest.Event{Client: 0, Input: storetest.Input{Kind: storetest.OpCreate, ID: 1, Plant: p},
		Output: storetest.Output{Result: storetest.Stored}, Call: 100, Return: 200})
	found := write("zone-b-found", storetest.Event{Client: 0, Input: storetest.Input{Kind: storetest.OpRead, ID: 1},
		Output: storetest.Output{Result: storetest.Found, Plant: p}, Call: 300, Return: 400})
	missing := write("zone-b-missing", storetest.Event{Client: 0, Input: storetest.Input{Kind: storetest.OpRead, ID: 1},
		Output: storetest.Output{Result: storetest.NotFound}, Call: 300, Return: 400})

	if v, err := check([]string{create, found}, 1, time.Second, filepath.Join(dir, "ok")); err != nil || !v.Linearizable || v.Ops != 2 {
		t.Fatalf("a read after the create that found it: %+v, %v; want linearizable", v, err)
	}
	v, err := check([]string{create, missing}, 1, time.Second, filepath.Join(dir, "bad"))
	if err != nil || v.Linearizable || len(v.Illegal) != 1 || v.Illegal[0] != 1 {
		t.Fatalf("a 404 after an acknowledged create: %+v, %v; want id 1 illegal", v, err)
	}
	for _, f := range []string{"bad-id1.html", "bad-id1.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	if _, err := check([]string{filepath.Join(dir, "none")}, 1, time.Second, dir); err == nil {
		t.Fatal("a missing history was checked")
	}
}
