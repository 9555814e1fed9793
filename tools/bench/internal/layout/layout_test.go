package layout

import (
	"math"
	"slices"
	"testing"
)

// The values docs/storage.md gives for the service's layout.
func TestLayoutVectors(t *testing.T) {
	for _, tc := range []struct {
		id     int64
		member string
		key    string
		index  string
	}{
		{-42, "7fffffffffffffd6", "p:plants:{s06.2}:-42", "p:plants:{s06.2}:index"},
		{0, "8000000000000000", "p:plants:{s00.22}:0", "p:plants:{s00.22}:index"},
		{7, "8000000000000007", "p:plants:{s07.1}:7", "p:plants:{s07.1}:index"},
		{math.MinInt64, "0000000000000000", "p:plants:{s00.22}:-9223372036854775808", "p:plants:{s00.22}:index"},
		{math.MaxInt64, "ffffffffffffffff", "p:plants:{s15.42}:9223372036854775807", "p:plants:{s15.42}:index"},
	} {
		if got := IndexMember(tc.id); got != tc.member {
			t.Errorf("IndexMember(%d) = %q, want %q", tc.id, got, tc.member)
		}
		if got, err := ParseIndexMember(tc.member); err != nil || got != tc.id {
			t.Errorf("ParseIndexMember(%q) = %d, %v, want %d", tc.member, got, err, tc.id)
		}
		if got := PlantKey("p:", tc.id); got != tc.key {
			t.Errorf("PlantKey(%d) = %q, want %q", tc.id, got, tc.key)
		}
		if got := IndexKey("p:", Shard(tc.id)); got != tc.index {
			t.Errorf("index of %d = %q, want %q", tc.id, got, tc.index)
		}
	}
}

func TestIndexMemberOrderIsIDOrder(t *testing.T) {
	ids := []int64{math.MinInt64, -1 << 53, -2, -1, 0, 1, 1 << 53, 1<<53 + 1, math.MaxInt64}
	members := make([]string, len(ids))
	for i, id := range ids {
		members[i] = IndexMember(id)
	}
	if !slices.IsSorted(members) {
		t.Errorf("members of ascending ids not in byte order: %q", members)
	}
}

func TestParseIndexMemberRejects(t *testing.T) {
	for _, m := range []string{"", "800000000000000", "80000000000000000", "800000000000000g"} {
		if _, err := ParseIndexMember(m); err == nil {
			t.Errorf("ParseIndexMember(%q): no error", m)
		}
	}
}
