package openapi

import (
	"flag"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/plantstore/plantstore/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of docs/api.md")

// TestAPIDoc: the tables of docs/api.md that restate the document are made
// from it. A part out of date fails with the difference; -update (make
// generate) rewrites it. The error-code table comes from internal/apierror
// (its own test); the route table is checked against the router too
// (internal/httpapi/routes_doc_test.go).
func TestAPIDoc(t *testing.T) {
	doc, err := loadDocument([]byte(readDocument(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, want string }{
		{"routes", routeTable(doc)},
		{"headers", headerTable(doc)},
		{"events", eventTable(doc)},
		{"event-headers", eventHeaderTable(doc)},
		{"event-body", eventBodyTable(doc)},
	} {
		docgen.Check(t, "docs/api.md", p.name, p.want, *update)
	}
}

// methods in the order the tables list them.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

type operation struct {
	method, path string
	*openapi3.Operation
}

// operations lists the API's operations (not the webhooks): the plants
// first, then the rest, each path's methods in the order of methods.
func operations(doc *openapi3.T) []operation {
	var ops []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		if strings.HasPrefix(path, webhookPath("")) {
			continue
		}
		item := doc.Paths.Value(path)
		for _, m := range methods {
			if op := item.GetOperation(m); op != nil {
				ops = append(ops, operation{m, path, op})
			}
		}
	}
	rank := func(o operation) int {
		if len(o.Tags) > 0 && o.Tags[0] == "plants" {
			return 0
		}
		return 1
	}
	sort.SliceStable(ops, func(i, j int) bool {
		if rank(ops[i]) != rank(ops[j]) {
			return rank(ops[i]) < rank(ops[j])
		}
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return methodRank(ops[i].method) < methodRank(ops[j].method)
	})
	return ops
}

func methodRank(m string) int {
	for i, x := range methods {
		if x == m {
			return i
		}
	}
	return len(methods)
}

// statuses lists the response keys of op in ascending order, split in
// successes (2xx, and 304: a conditional request answered) and the rest.
func statuses(op *openapi3.Operation) (success, failure []string) {
	keys := make([]string, 0, op.Responses.Len())
	for k := range op.Responses.Map() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "2") || k == "304" {
			success = append(success, k)
		} else {
			failure = append(failure, k)
		}
	}
	return success, failure
}

func routeTable(doc *openapi3.T) string {
	var rows [][]string
	for _, op := range operations(doc) {
		success, failure := statuses(op.Operation)
		var ok, fail []string
		for _, s := range success {
			r := op.Responses.Value(s).Value
			ok = append(ok, s+" ("+bodyOf(r)+")")
		}
		for _, s := range failure {
			codes := errorCodes(op.Responses.Value(s).Value)
			if len(codes) == 0 {
				fail = append(fail, s)
				continue
			}
			fail = append(fail, s+" ("+strings.Join(codes, ", ")+")")
		}
		rows = append(rows, []string{docgen.Code(op.method), docgen.Code(op.path), docgen.Cell(op.Summary), scopeOf(doc, op.Operation), strings.Join(ok, "; "), strings.Join(fail, ", ")})
	}
	return docgen.Table([]string{"method", "path", "what", "scope", "success", "errors (codes)"}, rows)
}

// scopeOf names the scopes op requires, or says it needs no token.
func scopeOf(doc *openapi3.T, op *openapi3.Operation) string {
	reqs := doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return "none (no token)"
	}
	var scopes []string
	for _, req := range reqs {
		for _, s := range req {
			for _, scope := range s {
				scopes = append(scopes, docgen.Code(scope))
			}
		}
	}
	if len(scopes) == 0 {
		return "any token"
	}
	return strings.Join(scopes, " or ")
}

// bodyOf says what a response carries: its schema, a media type, or none.
func bodyOf(r *openapi3.Response) string {
	var parts []string
	for _, mt := range sortedKeys(r.Content) {
		s := r.Content[mt].Schema
		switch {
		case mt == "application/json" && s != nil:
			parts = append(parts, schemaName(s))
		default:
			parts = append(parts, docgen.Code(mt))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no body")
	}
	for _, h := range sortedKeys(r.Headers) {
		parts = append(parts, docgen.Code(h))
	}
	return strings.Join(parts, ", ")
}

// schemaName names a schema by its component, or says what it is.
func schemaName(s *openapi3.SchemaRef) string {
	if s.Ref != "" {
		return docgen.Code(s.Ref[strings.LastIndex(s.Ref, "/")+1:])
	}
	v := s.Value
	switch {
	case v.Type.Is("array") && v.Items != nil:
		return "array of " + schemaName(v.Items)
	case len(v.AllOf) > 0: // the first names it; the others narrow it
		name := schemaName(v.AllOf[0])
		for _, narrowing := range v.AllOf[1:] {
			for _, p := range sortedKeys(narrowing.Value.Properties) {
				name += ", " + docgen.Code(p) + ": " + schemaName(narrowing.Value.Properties[p])
			}
		}
		return name
	case len(v.Enum) == 1:
		return docgen.Code(fmt.Sprint(v.Enum[0]))
	case len(v.Enum) > 0:
		vals := make([]string, len(v.Enum))
		for i, e := range v.Enum {
			vals[i] = docgen.Code(fmt.Sprint(e))
		}
		return "one of " + strings.Join(vals, ", ")
	case v.Format != "":
		return strings.Join(v.Type.Slice(), ", ") + " (" + v.Format + ")"
	}
	return strings.Join(v.Type.Slice(), ", ")
}

// errorCodes lists the error codes a response's examples show: each error
// response of the document has an example of every code it can carry.
func errorCodes(r *openapi3.Response) []string {
	seen := map[string]bool{}
	add := func(v any) {
		if m, ok := v.(map[string]any); ok {
			if c, ok := m["error"].(float64); ok {
				seen[strconv.Itoa(int(c))] = true
			}
		}
	}
	for _, mt := range r.Content {
		add(mt.Example)
		for _, ex := range mt.Examples {
			add(ex.Value.Value)
		}
	}
	return sortedKeys(seen)
}

// headerTable lists the response headers: where the document declares
// them and what they mean, a row per description (WWW-Authenticate has one
// for 401 and one for 403).
func headerTable(doc *openapi3.T) string {
	type key struct{ name, meaning string }
	on := map[key]map[string][]string{} // status -> the operations declaring it there
	withStatus := map[string]int{}      // status -> how many operations answer it
	for _, op := range operations(doc) {
		for status, r := range op.Responses.Map() {
			withStatus[status]++
			for name, h := range r.Value.Headers {
				k := key{name, oneLine(h.Value.Description)}
				if on[k] == nil {
					on[k] = map[string][]string{}
				}
				on[k][status] = append(on[k][status], op.method+" "+op.path)
			}
		}
	}
	keys := make([]key, 0, len(on))
	for k := range on {
		keys = append(keys, k)
	}
	first := func(k key) string { return sortedKeys(on[k])[0] }
	sort.Slice(keys, func(i, j int) bool {
		if first(keys[i]) != first(keys[j]) {
			return first(keys[i]) < first(keys[j])
		}
		return keys[i].name < keys[j].name
	})
	var rows [][]string
	for _, k := range keys {
		var where []string
		for _, status := range sortedKeys(on[k]) {
			ops := on[k][status]
			if len(ops) == withStatus[status] {
				where = append(where, status)
				continue
			}
			for i := range ops {
				ops[i] = docgen.Code(ops[i])
			}
			where = append(where, status+" of "+strings.Join(ops, ", "))
		}
		rows = append(rows, []string{docgen.Code(k.name), strings.Join(where, ", "), docgen.Cell(k.meaning)})
	}
	return docgen.Table([]string{"header", "declared on", "meaning"}, rows)
}

// webhooks lists the document's webhooks by name.
func webhooks(doc *openapi3.T) []operation {
	var ops []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		if name, ok := strings.CutPrefix(path, webhookPath("")); ok {
			ops = append(ops, operation{http.MethodPost, name, doc.Paths.Value(path).Post})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path < ops[j].path })
	return ops
}

func eventTable(doc *openapi3.T) string {
	var rows [][]string
	for _, wh := range webhooks(doc) {
		var headers []string
		for _, p := range wh.Parameters {
			if p.Value.In == openapi3.ParameterInHeader && p.Value.Required {
				headers = append(headers, docgen.Code(p.Value.Name))
			}
		}
		body := wh.RequestBody.Value.Content.Get("application/json").Schema
		rows = append(rows, []string{docgen.Code(wh.path), docgen.Cell(oneLine(wh.Description)), schemaName(body), strings.Join(headers, ", ")})
	}
	return docgen.Table([]string{"event", "sent", "body", "headers"}, rows)
}

func eventHeaderTable(doc *openapi3.T) string {
	seen := map[string]bool{}
	var rows [][]string
	for _, wh := range webhooks(doc) {
		for _, p := range wh.Parameters {
			if p.Value.In != openapi3.ParameterInHeader || seen[p.Value.Name] {
				continue
			}
			seen[p.Value.Name] = true
			rows = append(rows, []string{docgen.Code(p.Value.Name), schemaName(p.Value.Schema), docgen.Cell(oneLine(p.Value.Description))})
		}
	}
	return docgen.Table([]string{"header", "value", "meaning"}, rows)
}

func eventBodyTable(doc *openapi3.T) string {
	s := doc.Components.Schemas["WebhookEvent"].Value
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	// The required members in the order the schema lists them, then the rest.
	names := append([]string(nil), s.Required...)
	for _, name := range sortedKeys(s.Properties) {
		if !required[name] {
			names = append(names, name)
		}
	}
	var rows [][]string
	for _, name := range names {
		p := s.Properties[name]
		meaning := p.Value.Description // of the component, for a reference
		req := "optional"
		if required[name] {
			req = "always"
		}
		rows = append(rows, []string{docgen.Code(name), schemaName(p), req, docgen.Cell(oneLine(meaning))})
	}
	return docgen.Table([]string{"member", "value", "present", "meaning"}, rows)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
