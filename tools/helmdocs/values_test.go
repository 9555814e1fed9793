// Package helmdocs pins helm-docs, which writes the values table of the
// chart's README from the comments of values.yaml, and checks that table
// against values.schema.json: helm-docs infers a type from the default (null
// reads as a string) and knows nothing of the schema's enumerations. The
// schema's descriptions are written from the table.
package helmdocs

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	readmePath = "../../charts/plantstore/README.md"
	schemaPath = "../../charts/plantstore/values.schema.json"
	tableHead  = "| key | type | default | description |"
)

// row is one line of the values table.
type row struct {
	key, typ, description string
}

// schemaNode is the part of a JSON schema the table restates.
type schemaNode struct {
	Type       any                    `json:"type"` // a name or a list of names
	Enum       []any                  `json:"enum"`
	OneOf      []schemaNode           `json:"oneOf"`
	AnyOf      []schemaNode           `json:"anyOf"`
	Properties map[string]*schemaNode `json:"properties"`
}

func TestValuesTableAgreesWithSchema(t *testing.T) {
	rows := valuesTable(t, readFile(t, readmePath))
	var schema schemaNode
	if err := json.Unmarshal([]byte(readFile(t, schemaPath)), &schema); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}

	documented := map[string]bool{}
	for _, r := range rows {
		documented[r.key] = true
		node := schema.lookup(r.key)
		if node == nil {
			t.Errorf("%s: values.schema.json has no property %s", r.key, r.key)
			continue
		}
		if r.description == "" {
			t.Errorf("%s: no description: put a `# -- ` comment above it in values.yaml", r.key)
		}
		if got, want := tableTypes(r.typ), node.types(); !slices.Equal(got, want) {
			t.Errorf("%s: the table says %q, the schema %v: annotate the comment in values.yaml, e.g. `# -- (%s) ...`",
				r.key, r.typ, want, strings.Join(want, " or "))
		}
		// The enumerations of the key, or of the keys under it when the
		// table describes an object whole (tests.image, probes.startup...).
		node.walk(r.key, func(path string, n *schemaNode) {
			for _, v := range n.Enum {
				if s, ok := v.(string); ok && !mentions(r.description, s) {
					t.Errorf("%s: the description does not name %q, one of the values the schema allows for %s", r.key, s, path)
				}
			}
		})
	}

	// Every key of the schema is a row, under one (an object described
	// whole), or above one; helm adds global to every chart.
	schema.walk("", func(path string, _ *schemaNode) {
		if path == "" || path == "global" || documented[path] {
			return
		}
		for key := range documented {
			if strings.HasPrefix(path, key+".") || strings.HasPrefix(key, path+".") {
				return
			}
		}
		t.Errorf("%s: in values.schema.json but not in the values table: give it a default and a `# -- ` comment in values.yaml, or describe it in its parent's", path)
	})
}

// TestValuesTableParse keeps the parser honest: escaped pipes stay in their
// cell, rows end at the table's end, a missing table is an error.
func TestValuesTableParse(t *testing.T) {
	readme := "# chart\n\n" + tableHead + "\n|---|---|---|---|\n" +
		"| `a.b` | integer or \"N%\" | `1` | Either \\| or. |\n" +
		"| `c` | boolean | `true` | On. |\n\nAfter the table.\n| `d` | string | `\"\"` | Not a row. |\n"
	want := []row{{"a.b", `integer or "N%"`, "Either | or."}, {"c", "boolean", "On."}}
	if got := valuesTable(t, readme); !slices.Equal(got, want) {
		t.Errorf("rows: got %q, want %q", got, want)
	}
	if got := tableTypes(`integer, "N%" or null`); !slices.Equal(got, []string{"integer", "null", "string"}) {
		t.Errorf("tableTypes: got %q", got)
	}
	for _, tc := range []struct {
		text, word string
		want       bool
	}{
		{"debug, info, warn or error", "warn", true},
		{"parentbased_traceidratio only", "traceidratio", false},
		{"no leaves it to the kernel", "no", true},
		{"not now", "no", false},
		{"http/protobuf or grpc", "http/protobuf", true},
	} {
		if got := mentions(tc.text, tc.word); got != tc.want {
			t.Errorf("mentions(%q, %q) = %v, want %v", tc.text, tc.word, got, tc.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// valuesTable returns the rows of the table that starts with tableHead.
func valuesTable(t *testing.T, readme string) []row {
	t.Helper()
	lines := strings.Split(readme, "\n")
	start := slices.Index(lines, tableHead)
	if start < 0 || start+1 >= len(lines) {
		t.Fatalf("no line %q starts a values table", tableHead)
	}
	var rows []row
	for _, line := range lines[start+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		// A pipe escaped as \| is text of its cell, not a border.
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if len(cells) != 6 {
			t.Fatalf("values table row with %d cells, want 4: %s", len(cells)-2, line)
		}
		cell := func(i int) string { return strings.ReplaceAll(strings.TrimSpace(cells[i]), "\x00", "|") }
		rows = append(rows, row{key: strings.Trim(cell(1), "`"), typ: cell(2), description: cell(4)})
	}
	return rows
}

// tableTypes reads a type cell, `integer, "N%" or null`, as sorted schema type names.
func tableTypes(cell string) []string {
	types := regexp.MustCompile(`, | or `).Split(cell, -1)
	for i, name := range types {
		if name == `"N%"` {
			types[i] = "string" // a percentage
		}
	}
	slices.Sort(types)
	return slices.Compact(types)
}

// mentions reports whether text has word with no letter, digit or _ on either side.
func mentions(text, word string) bool {
	return regexp.MustCompile(`(^|[^\w])` + regexp.QuoteMeta(word) + `($|[^\w])`).MatchString(text)
}

func (n *schemaNode) lookup(key string) *schemaNode {
	for _, name := range strings.Split(key, ".") {
		if n = n.Properties[name]; n == nil {
			return nil
		}
	}
	return n
}

// types returns the sorted type names the node allows.
func (n *schemaNode) types() []string {
	var types []string
	switch v := n.Type.(type) {
	case string:
		types = append(types, v)
	case []any:
		for _, name := range v {
			types = append(types, name.(string))
		}
	}
	for _, alt := range slices.Concat(n.OneOf, n.AnyOf) {
		types = append(types, alt.types()...)
	}
	slices.Sort(types)
	return slices.Compact(types)
}

// walk calls f for n and every property under it, with its dotted path.
func (n *schemaNode) walk(path string, f func(string, *schemaNode)) {
	f(path, n)
	for name, child := range n.Properties {
		if path != "" {
			name = path + "." + name
		}
		child.walk(name, f)
	}
}
