package auth

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestAcceptsComparesInConstantTime checks, on the source of TokenSet.Lookup
// (which Accepts calls), the structure that keeps token comparison from
// leaking through timing, instead of measuring wall-clock time (which would
// flake on a busy machine):
//
//   - the presented token is hashed with sha256.Sum256 before anything else
//     looks at it, so what is compared has a fixed length and no prefix in
//     common with a stored digest that the client could steer;
//   - one loop runs over every stored digest, with no break, return, goto,
//     condition or comparison inside it, so the work does not depend on
//     where, or whether, a digest matches;
//   - inside the loop the digests are compared whole with
//     subtle.ConstantTimeCompare, the matching index is picked with
//     subtle.ConstantTimeSelect (bitwise arithmetic, no branch), and the
//     results are OR-ed together;
//   - the result is read once, after the loop.
//
// And the set holds digests and clients only: no field of TokenSet can hold
// a raw token.
func TestAcceptsComparesInConstantTime(t *testing.T) {
	if fn := parseMethod(t, "tokens.go", "TokenSet", "Accepts"); strings.Join(strings.Fields(render(t, fn.Body)), " ") != "{ return s.Lookup(token) != nil }" {
		t.Fatalf("Accepts must be Lookup's answer, got %s", render(t, fn.Body))
	}
	fn := parseMethod(t, "tokens.go", "TokenSet", "Lookup")
	body := fn.Body.List
	if len(body) != 5 {
		t.Fatalf("Lookup has %d statements; expected hash, accumulators, loop, check, result:\n%s", len(body), render(t, fn))
	}

	// 1. d := sha256.Sum256([]byte(token))
	hash, ok := body[0].(*ast.AssignStmt)
	if !ok || len(hash.Rhs) != 1 || !isCall(hash.Rhs[0], "sha256", "Sum256") || !mentions(hash.Rhs[0], "token") {
		t.Fatalf("the first statement of Lookup must hash the token with sha256.Sum256, got %s", render(t, body[0]))
	}
	digest := hash.Lhs[0].(*ast.Ident).Name

	// 2. The token is not used after it is hashed.
	for _, st := range body[1:] {
		if mentions(st, "token") {
			t.Fatalf("the raw token is used after hashing: %s", render(t, st))
		}
	}

	// 3. for i := range s.digests { eq := subtle.ConstantTimeCompare(d[:], s.digests[i][:]); index = subtle.ConstantTimeSelect(...); found |= eq }
	loop, ok := body[2].(*ast.RangeStmt)
	if !ok || render(t, loop.X) != "s.digests" {
		t.Fatalf("Lookup must range over every stored digest, got %s", render(t, body[2]))
	}
	if len(loop.Body.List) != 3 {
		t.Fatalf("the loop must hold three statements (compare, select, accumulate), got %s", render(t, loop.Body))
	}
	cmp, ok := loop.Body.List[0].(*ast.AssignStmt)
	if !ok || len(cmp.Rhs) != 1 || !isCall(cmp.Rhs[0], "subtle", "ConstantTimeCompare") {
		t.Fatalf("the loop must first compare with subtle.ConstantTimeCompare, got %s", render(t, loop.Body.List[0]))
	}
	args := cmp.Rhs[0].(*ast.CallExpr).Args
	if got := render(t, args[0]) + ", " + render(t, args[1]); got != digest+"[:], s.digests[i][:]" {
		t.Fatalf("ConstantTimeCompare must compare the whole digests, got (%s)", got)
	}
	sel, ok := loop.Body.List[1].(*ast.AssignStmt)
	if !ok || len(sel.Rhs) != 1 || !isCall(sel.Rhs[0], "subtle", "ConstantTimeSelect") {
		t.Fatalf("the loop must pick the index with subtle.ConstantTimeSelect, got %s", render(t, loop.Body.List[1]))
	}
	acc, ok := loop.Body.List[2].(*ast.AssignStmt)
	if !ok || acc.Tok != token.OR_ASSIGN {
		t.Fatalf("the loop must OR the comparisons together, got %s", render(t, loop.Body.List[2]))
	}
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BranchStmt, *ast.ReturnStmt, *ast.IfStmt, *ast.SwitchStmt:
			t.Errorf("the loop has a data-dependent branch: %s", render(t, n))
		case *ast.BinaryExpr:
			if n.Op != token.AND_NOT && n.Op != token.AND && n.Op != token.OR {
				t.Errorf("the loop has a comparison or arithmetic beyond bitwise: %s", render(t, n))
			}
		}
		return true
	})

	// 4. if found == 0 { return nil }, after the loop, then the client.
	if check, ok := body[3].(*ast.IfStmt); !ok || render(t, check.Cond) != render(t, acc.Lhs[0])+" == 0" {
		t.Fatalf("Lookup must read the accumulated result once, after the loop, got %s", render(t, body[3]))
	}
	if ret, ok := body[4].(*ast.ReturnStmt); !ok || render(t, ret.Results[0]) != "s.clients["+render(t, sel.Lhs[0])+"]" {
		t.Fatalf("Lookup must return the selected client, got %s", render(t, body[4]))
	}

	// The set keeps nothing but fixed-length digests and their clients,
	// and identity lines, which hold no token.
	st := reflect.TypeFor[TokenSet]()
	for i := range st.NumField() {
		if f := st.Field(i); f.Type != reflect.TypeFor[[]Digest]() && f.Type != reflect.TypeFor[[]*Client]() && f.Type != reflect.TypeFor[[]identityRule]() {
			t.Errorf("TokenSet.%s is a %v: the set must keep only digests, clients and identity lines", f.Name, f.Type)
		}
	}
	if n := reflect.TypeFor[Digest]().Len(); n != 32 {
		t.Errorf("a Digest has %d bytes, want 32 (SHA-256)", n)
	}
}

// TestAcceptsMatchesAnyPosition checks the behaviour the structure serves:
// a token is found wherever it sits in the set, and near misses (a prefix,
// an extension, one byte changed at either end) are refused.
func TestAcceptsMatchesAnyPosition(t *testing.T) {
	valid := timingToken()
	for pos := range 5 {
		tokens := []string{"t0", "t1", "t2", "t3"}
		tokens = append(tokens[:pos], append([]string{valid}, tokens[pos:]...)...)
		s := NewTokenSet(tokens...)
		if !s.Accepts(valid) {
			t.Errorf("the token at position %d of %d is refused", pos, s.Len())
		}
		for _, near := range []string{valid[:len(valid)-1], valid + "A", "B" + valid[1:], valid[:len(valid)-1] + "B", ""} {
			if s.Accepts(near) {
				t.Errorf("the near miss %q is accepted", near)
			}
		}
	}
}

// BenchmarkTokenCompare times the lookup of a token that shares all but its
// last byte with a valid one against one that shares nothing, in a set of
// 16. The ratio is reported (prefix/different, near 1 when comparison leaks
// nothing), never asserted: wall-clock figures flake on a shared machine;
// TestAcceptsComparesInConstantTime is the assertion.
func BenchmarkTokenCompare(b *testing.B) {
	valid := timingToken()
	tokens := []string{valid}
	for i := range 15 {
		tokens = append(tokens, strings.Repeat(string(rune('c'+i)), len(valid)))
	}
	set := NewTokenSet(tokens...)
	prefix := valid[:len(valid)-1] + "B"
	different := strings.Repeat("Z", len(valid))
	var sink bool
	b.Run("prefix", func(b *testing.B) {
		for b.Loop() {
			sink = set.Accepts(prefix)
		}
	})
	b.Run("different", func(b *testing.B) {
		for b.Loop() {
			sink = set.Accepts(different)
		}
	})
	// Interleaved batches of both (ns/op is per lookup), so that a change in
	// machine load hits both alike; the ratio of the totals is the figure.
	b.Run("ratio", func(b *testing.B) {
		const batch = 64
		var tPrefix, tDifferent time.Duration
		for n := 0; n < b.N; n += 2 * batch {
			start := time.Now()
			for range batch {
				sink = set.Accepts(prefix)
			}
			mid := time.Now()
			for range batch {
				sink = set.Accepts(different)
			}
			tPrefix += mid.Sub(start)
			tDifferent += time.Since(mid)
		}
		b.ReportMetric(float64(tPrefix)/float64(tDifferent), "prefix/different")
	})
	_ = sink
}

func timingToken() string {
	return "Aq2-7wEXAMPLEtokenxGQmR1cFZ8kq0xY4H9vN0aB2cQq2-7wEXAMPLEtokenxGQmR1cA"
}

// sourceFiles holds the positions of the files parseMethod reads.
var sourceFiles = token.NewFileSet()

func parseMethod(t *testing.T, file, recv, name string) *ast.FuncDecl {
	t.Helper()
	f, err := parser.ParseFile(sourceFiles, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if ok && fn.Name.Name == name && fn.Recv != nil && strings.Contains(render(t, fn.Recv.List[0].Type), recv) {
			return fn
		}
	}
	t.Fatalf("%s has no method %s.%s", file, recv, name)
	return nil
}

func isCall(e ast.Expr, pkg, fn string) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == fn
}

func mentions(n ast.Node, ident string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == ident {
			found = true
		}
		return !found
	})
	return found
}

func render(t *testing.T, n ast.Node) string {
	t.Helper()
	var sb strings.Builder
	if err := printer.Fprint(&sb, sourceFiles, n); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}
