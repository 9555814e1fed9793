package helmdocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the descriptions of values.schema.json from the values table")

// TestSchemaDescriptionsAreTheComments: the description of every key of the
// values table in values.schema.json (what an editor shows on hover) is the
// key's `# --` comment in values.yaml, as helm-docs put it in the table.
// With -update (make chart-docs) it rewrites them in place, keeping the
// file's layout. The objects above the rows (migration, otel...) keep their
// own descriptions: values.yaml has no `# --` comment for them.
func TestSchemaDescriptionsAreTheComments(t *testing.T) {
	want := map[string]string{}
	for _, r := range valuesTable(t, readFile(t, readmePath)) {
		want[r.key] = html.UnescapeString(r.description)
	}
	doc := []byte(readFile(t, schemaPath))
	next, stale, err := rewriteDescriptions(doc, want)
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	if len(stale) == 0 {
		return
	}
	if *update {
		if err := os.WriteFile(schemaPath, next, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote %d descriptions from values.yaml", schemaPath, len(stale))
		return
	}
	t.Errorf("%s: %d descriptions are not values.yaml's comments; run make chart-docs:\n%s",
		schemaPath, len(stale), strings.Join(stale, "\n"))
}

func TestRewriteDescriptions(t *testing.T) {
	doc := []byte(`{
  "properties": {
    "a": {"type": "object", "description": "A group.", "properties": {
      "b": {"description": "old \"b\"", "type": "string"},
      "c": {"type": "integer"}
    }},
    "d": {"description": "kept"}
  }
}`)
	next, stale, err := rewriteDescriptions(doc, map[string]string{"a.b": "New <b> & \"quoted\".", "d": "kept"})
	if err != nil {
		t.Fatal(err)
	}
	wantDoc := strings.Replace(string(doc), `"old \"b\""`, `"New <b> & \"quoted\"."`, 1)
	if string(next) != wantDoc {
		t.Errorf("rewritten:\n%s\nwant:\n%s", next, wantDoc)
	}
	if len(stale) != 1 || !strings.HasPrefix(stale[0], "a.b:") {
		t.Errorf("stale = %q, want the one row a.b", stale)
	}
	if _, stale, _ := rewriteDescriptions(doc, map[string]string{"a.c": "C."}); len(stale) != 1 || !strings.Contains(stale[0], "no description") {
		t.Errorf("a row whose key has no description: stale = %q", stale)
	}
	if _, _, err := rewriteDescriptions([]byte(`{"properties": {`), nil); err == nil {
		t.Error("a truncated schema: no error")
	}
}

// rewriteDescriptions returns doc with the description of each key of want
// (a dotted path through "properties") set to its text, and a line for each
// that differed or was missing. It edits the bytes of each description's
// value only, so the rest of the file stays as written.
func rewriteDescriptions(doc []byte, want map[string]string) ([]byte, []string, error) {
	type span struct{ start, end int64 }
	found := map[string]span{}
	dec := json.NewDecoder(bytes.NewReader(doc))
	var path []string // the keys from the root to the value being read
	var walk func() error
	walk = func() error { // reads one value
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok != json.Delim('{') {
			if d, ok := tok.(json.Delim); ok && d == '[' {
				for dec.More() {
					if err := walk(); err != nil {
						return err
					}
				}
				_, err = dec.Token()
			}
			return err
		}
		for dec.More() {
			keyTok, err := dec.Token()
			if err != nil {
				return err
			}
			key := keyTok.(string)
			start := dec.InputOffset()
			path = append(path, key)
			if err := walk(); err != nil {
				return err
			}
			if key == "description" {
				if name, ok := propertyPath(path); ok {
					found[name] = span{start, dec.InputOffset()}
				}
			}
			path = path[:len(path)-1]
		}
		_, err = dec.Token()
		return err
	}
	if err := walk(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("text after the schema")
	}

	var stale []string
	type edit struct {
		span
		text []byte
	}
	var edits []edit
	for key, text := range want {
		s, ok := found[key]
		if !ok {
			stale = append(stale, key+": no description")
			continue
		}
		// The span runs from after the key to after the value: `: "..."`.
		raw := doc[s.start:s.end]
		q := bytes.IndexByte(raw, '"')
		var current string
		if err := json.Unmarshal(raw[q:], &current); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", key, err)
		}
		if current == text {
			continue
		}
		stale = append(stale, fmt.Sprintf("%s:\n  - %s\n  + %s", key, current, text))
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(text); err != nil {
			return nil, nil, err
		}
		edits = append(edits, edit{span{s.start + int64(q), s.end}, bytes.TrimSpace(enc.Bytes())})
	}
	// Apply from the end, so that earlier offsets stay right.
	slices.SortFunc(edits, func(a, b edit) int { return int(b.start - a.start) })
	next := bytes.Clone(doc)
	for _, e := range edits {
		next = slices.Concat(next[:e.start], e.text, next[e.end:])
	}
	slices.Sort(stale)
	return next, stale, nil
}

// propertyPath turns ["properties","a","properties","b","description"]
// into "a.b"; a description anywhere else (under items, oneOf...) is not a
// value's.
func propertyPath(path []string) (string, bool) {
	keys := path[:len(path)-1]
	if len(keys) == 0 || len(keys)%2 != 0 {
		return "", false
	}
	var names []string
	for i := 0; i < len(keys); i += 2 {
		if keys[i] != "properties" {
			return "", false
		}
		names = append(names, keys[i+1])
	}
	return strings.Join(names, "."), true
}
