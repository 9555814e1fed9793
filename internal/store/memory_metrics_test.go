package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/plantstore/plantstore/internal/redistest"
)

func memoryReply(used, limit int64) map[string]string {
	return map[string]string{"used_memory": strconv.FormatInt(used, 10), "used_memory_human": "1M",
		"maxmemory": strconv.FormatInt(limit, 10), "maxmemory_policy": "noeviction"}
}

func TestNearestLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		infos       []map[string]string
		used, limit int64
		ok          bool
	}{
		{"one node", []map[string]string{memoryReply(100, 1000)}, 100, 1000, true},
		{"no limit", []map[string]string{memoryReply(100, 0)}, 100, 0, true},
		{"the fuller share, not the bigger use", []map[string]string{memoryReply(500, 10000), memoryReply(90, 100), memoryReply(10, 1000)}, 90, 100, true},
		{"a limit wins over none", []map[string]string{memoryReply(5000, 0), memoryReply(1, 1000)}, 1, 1000, true},
		{"without limits, the biggest use", []map[string]string{memoryReply(5, 0), memoryReply(7, 0)}, 7, 0, true},
		{"over the limit", []map[string]string{memoryReply(2000, 1000)}, 2000, 1000, true},
		{"field missing", []map[string]string{{"used_memory_human": "1M"}}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used, limit, ok := nearestLimit(tc.infos)
			if used != tc.used || limit != tc.limit || ok != tc.ok {
				t.Errorf("nearestLimit = %d, %d, %v; want %d, %d, %v", used, limit, ok, tc.used, tc.limit, tc.ok)
			}
		})
	}
}

// TestMemoryCollector: on a real Redis the gauges are its used_memory and
// maxmemory; a reading that fails exports nothing rather than a stale value.
func TestMemoryCollector(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "64mb")
	c := NewMemoryCollector(srv.Client(), time.Second)
	if n := testutil.CollectAndCount(c); n != 2 {
		t.Fatalf("%d metrics, want 2", n)
	}
	want := "plantstore_store_memory_max_bytes 6.7108864e+07" // 64 MiB
	got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "plantstore_store_memory_max_bytes", "plantstore_store_memory_used_bytes")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), want+"\n") || !strings.Contains(string(got), "plantstore_store_memory_used_bytes ") {
		t.Fatalf("collected:\n%s\nwant %q and a used_bytes sample", got, want)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	failing := newMemoryCollector(func(context.Context) ([]map[string]string, error) { return nil, errors.New("down") }, time.Second)
	if n := testutil.CollectAndCount(failing); n != 0 {
		t.Errorf("a failed reading exported %d metrics, want 0", n)
	}
	srv.Stop()
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("with Redis stopped: %d metrics, want 0", n)
	}
}
