package store

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFirstMerged: the first n of sorted lists' merge is the first n of all
// their strings sorted, whatever the lists' lengths (empty ones among them).
func TestFirstMerged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists [][]string
		n     int
		want  []string
	}{
		{name: "none", lists: nil, n: 3, want: []string{}},
		{name: "all empty", lists: [][]string{{}, nil, {}}, n: 3, want: []string{}},
		{name: "fewer than n", lists: [][]string{{"b"}, {}, {"a", "c"}}, n: 5, want: []string{"a", "b", "c"}},
		{name: "interleaved", lists: [][]string{{"a", "d", "g"}, {"b", "e"}, {"c", "f", "h"}}, n: 5, want: []string{"a", "b", "c", "d", "e"}},
		{name: "one list first", lists: [][]string{{"x", "y"}, {"a", "b", "c"}}, n: 3, want: []string{"a", "b", "c"}},
		{name: "zero", lists: [][]string{{"a"}}, n: 0, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstMerged(tc.lists, tc.n); !slices.Equal(got, tc.want) {
				t.Fatalf("firstMerged = %q, want %q", got, tc.want)
			}
		})
	}

	// Index members of random ids spread over the shards as List reads them.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		lists := make([][]string, Shards)
		var all []string
		for range rng.IntN(400) {
			id := int64(rng.Uint64())
			m := IndexMember(id)
			lists[ShardOf(id)] = append(lists[ShardOf(id)], m)
			all = append(all, m)
		}
		for _, l := range lists {
			slices.Sort(l)
		}
		slices.Sort(all)
		n := rng.IntN(120)
		if got, want := firstMerged(lists, n), all[:min(n, len(all))]; !slices.Equal(got, want) {
			t.Fatalf("firstMerged of %d members, n=%d: %q, want %q", len(all), n, got, want)
		}
	}
}
