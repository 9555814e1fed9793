package manifest

import (
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // kind/name of each object
		wantErr  bool
	}{
		{"separators with spaces and comments", "---\n# Source: a\nkind: A\nmetadata: {name: a}\n--- \nkind: B\nmetadata: {name: b}\n--- # c\nkind: C\nmetadata: {name: c}\n", []string{"A/a", "B/b", "C/c"}, false},
		{"empty and comment-only documents", "---\n---\n# nothing\n---\nkind: A\nmetadata: {name: a}\n", []string{"A/a"}, false},
		{"a List's items", "kind: List\nitems: [{kind: A, metadata: {name: a}}, {kind: B, metadata: {name: b}}]\n", []string{"A/a", "B/b"}, false},
		{"no trailing newline", "kind: A\nmetadata: {name: a}", []string{"A/a"}, false},
		{"invalid YAML", "kind: A\n---\nkind: [\n", nil, true},
		{"not a separator", "kind: A\n--- x\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Read(strings.NewReader(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error; read %v", objs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, String(o, "kind")+"/"+String(o, "metadata", "name"))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGet(t *testing.T) {
	o := Object{"a": Object{"b": "c", "n": 1}}
	if String(o, "a", "b") != "c" || String(o, "a", "n") != "" || Get(o, "a", "b", "x") != nil || Get(o, "z") != nil {
		t.Errorf("Get/String on %v", o)
	}
}
