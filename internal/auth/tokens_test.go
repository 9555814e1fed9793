package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// sha256Line returns the "sha256:<hex>" form of token, in lower or upper case hex.
func sha256Line(token string, upper bool) string {
	sum := sha256.Sum256([]byte(token))
	h := hex.EncodeToString(sum[:])
	if upper {
		h = strings.ToUpper(h)
	}
	return "sha256:" + h
}

func TestParseTokensAccepts(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		len     int
		accept  []string
		reject  []string
		comment string
	}{
		{
			name:   "one raw token",
			file:   "tok-A\n",
			len:    1,
			accept: []string{"tok-A"},
			reject: []string{"tok-a", "tok-", "tok-AA", ""},
		},
		{
			name:   "no final newline",
			file:   "tok-A",
			len:    1,
			accept: []string{"tok-A"},
		},
		{
			name:   "lower case digest",
			file:   sha256Line("hashed.token", false) + "\n",
			len:    1,
			accept: []string{"hashed.token"},
			reject: []string{sha256Line("hashed.token", false), "hashed.toke"},
		},
		{
			name:   "upper case digest",
			file:   sha256Line("hashed.token", true) + "\n",
			len:    1,
			accept: []string{"hashed.token"},
			reject: []string{sha256Line("hashed.token", true)},
		},
		{
			name: "comments, blank lines and whitespace",
			file: "# issued 2026-01-01\n" +
				"\n" +
				"   \t\n" +
				"  raw1  \n" +
				"\traw2\t# the CI key\n" +
				"raw3#comment with no space\n" +
				"   # indented comment\n" +
				"  " + sha256Line("raw4", false) + "   # digest of raw4\n",
			len:    4,
			accept: []string{"raw1", "raw2", "raw3", "raw4"},
			reject: []string{
				"# issued 2026-01-01", "the CI key", "raw2\t# the CI key", " raw1", "raw1 ",
				"comment with no space", "raw3#comment with no space",
			},
		},
		{
			name:   "CRLF line endings",
			file:   "win1\r\nwin2\r\n",
			len:    2,
			accept: []string{"win1", "win2"},
			reject: []string{"win1\r"},
		},
		{
			name:   "token68 with trailing padding and every allowed character",
			file:   "aZ09-._~+/==\n",
			len:    1,
			accept: []string{"aZ09-._~+/=="},
			reject: []string{"aZ09-._~+/", "aZ09-._~+/="},
		},
		{
			name:   "raw and digest of the same token",
			file:   "same\n" + sha256Line("same", false) + "\n",
			len:    2,
			accept: []string{"same"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseTokens(strings.NewReader(tt.file), time.Now())
			if err != nil {
				t.Fatalf("ParseTokens: %v", err)
			}
			if s.Len() != tt.len {
				t.Errorf("Len() = %d, want %d", s.Len(), tt.len)
			}
			for _, tok := range tt.accept {
				if !s.Accepts(tok) {
					t.Errorf("Accepts(%q) = false, want true", tok)
				}
			}
			for _, tok := range tt.reject {
				if s.Accepts(tok) {
					t.Errorf("Accepts(%q) = true, want false", tok)
				}
			}
		})
	}
}

func TestParseTokensErrors(t *testing.T) {
	const secret = "s3cr3t-value"
	tests := []struct {
		name     string
		file     string
		line     string // "line N" the error must name
		mustHide []string
	}{
		{
			name:     "digest too short",
			file:     "ok-token\nsha256:abcdef\n",
			line:     "line 2",
			mustHide: []string{"abcdef"},
		},
		{
			name:     "digest too long",
			file:     sha256Line(secret, false) + "00\n",
			line:     "line 1",
			mustHide: []string{sha256Line(secret, false)[7:]},
		},
		{
			name:     "digest of 64 characters that are not hex",
			file:     "# header\n\nsha256:" + strings.Repeat("zz", 32) + "\n",
			line:     "line 3",
			mustHide: []string{strings.Repeat("zz", 32)},
		},
		{
			name:     "empty digest",
			file:     "sha256:\n",
			line:     "line 1",
			mustHide: nil,
		},
		{
			name:     "token with a space inside",
			file:     "good\n\n# c\n" + secret + " more\n",
			line:     "line 4",
			mustHide: []string{secret, "more"},
		},
		{
			name:     "token with a quote",
			file:     `tok"` + secret + "\n",
			line:     "line 1",
			mustHide: []string{secret},
		},
		{
			name:     "token with = in the middle",
			file:     secret + "=x\n",
			line:     "line 1",
			mustHide: []string{secret},
		},
		{
			name:     "token with non-ASCII letters",
			file:     "pässwörd" + secret + "\n",
			line:     "line 1",
			mustHide: []string{secret, "pässwörd"},
		},
		{
			name:     "token with a colon (an unknown prefix)",
			file:     "md5:" + secret + "\n",
			line:     "line 1",
			mustHide: []string{secret},
		},
		{
			name:     "bad line after good lines",
			file:     "a\nb\nc\nd\ne\nf\ng\nh\ni\n" + secret + "!\n",
			line:     "line 10",
			mustHide: []string{secret},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseTokens(strings.NewReader(tt.file), time.Now())
			if err == nil {
				t.Fatalf("ParseTokens succeeded with %d tokens, want an error", s.Len())
			}
			if errors.Is(err, ErrNoTokens) {
				t.Errorf("error %v is ErrNoTokens, want a syntax error", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.line+":") {
				t.Errorf("error %q does not name %q", msg, tt.line)
			}
			for _, h := range tt.mustHide {
				if strings.Contains(msg, h) {
					t.Errorf("error %q leaks %q from the file", msg, h)
				}
			}
			if s.Len() != 0 {
				t.Errorf("a failed parse returned %d tokens, want none", s.Len())
			}
		})
	}
}

func TestParseTokensNoTokens(t *testing.T) {
	for name, file := range map[string]string{
		"empty":              "",
		"only newlines":      "\n\n\n",
		"only whitespace":    "  \t \n \r\n",
		"only comments":      "# one\n   # two\n#\n",
		"comments and blank": "\n# rotated out: old-token\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(file), time.Now())
			if !errors.Is(err, ErrNoTokens) {
				t.Fatalf("ParseTokens(%q) error = %v, want ErrNoTokens", file, err)
			}
		})
	}
}

func TestParseTokensReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := ParseTokens(iotest.ErrReader(boom), time.Now())
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want it to wrap the reader's error", err)
	}
	if errors.Is(err, ErrNoTokens) {
		t.Fatalf("a read error must not be reported as ErrNoTokens: %v", err)
	}
}

func TestTokenSetAccepts(t *testing.T) {
	const token = "Zm9vYmFyYmF6cXV4-_.~+/=="
	raw := NewTokenSet(token)
	hashed, err := ParseTokens(strings.NewReader(sha256Line(token, false)+"\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hashedUpper, err := ParseTokens(strings.NewReader(sha256Line(token, true)+"\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parsedRaw, err := ParseTokens(strings.NewReader(token+"\n"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]TokenSet{
		"NewTokenSet":      raw,
		"raw line":         parsedRaw,
		"sha256 lower hex": hashed,
		"sha256 upper hex": hashedUpper,
	}
	cases := []struct {
		name  string
		token string
		want  bool
	}{
		{"the token", token, true},
		{"empty", "", false},
		{"wrong token", "not-the-token", false},
		{"prefix", token[:len(token)-1], false},
		{"first character only", token[:1], false},
		{"token plus a character", token + "x", false},
		{"token plus padding", token + "=", false},
		{"token with a space after", token + " ", false},
		{"token with a space before", " " + token, false},
		{"other case", strings.ToLower(token), false},
		{"the digest itself", sha256Line(token, false), false},
	}
	for setName, s := range sets {
		for _, c := range cases {
			if got := s.Accepts(c.token); got != c.want {
				t.Errorf("%s: Accepts(%s %q) = %v, want %v", setName, c.name, c.token, got, c.want)
			}
		}
	}
}

func TestTokenSetEmptyAndUnion(t *testing.T) {
	var empty TokenSet
	if empty.Len() != 0 || empty.Accepts("") || empty.Accepts("x") {
		t.Fatal("the zero TokenSet must accept nothing")
	}
	if s := NewTokenSet(); s.Len() != 0 || s.Accepts("") {
		t.Fatal("NewTokenSet() must accept nothing")
	}

	a, b := NewTokenSet("alpha", "beta"), NewTokenSet("gamma")
	u := a.Union(b)
	if u.Len() != 3 {
		t.Errorf("Union Len() = %d, want 3", u.Len())
	}
	for _, tok := range []string{"alpha", "beta", "gamma"} {
		if !u.Accepts(tok) {
			t.Errorf("union does not accept %q", tok)
		}
	}
	if u.Accepts("delta") {
		t.Error("union accepts a token of neither set")
	}
	// Union must not alias either operand.
	if a.Len() != 2 || a.Accepts("gamma") || b.Len() != 1 || b.Accepts("alpha") {
		t.Error("Union changed an operand")
	}
	if got := empty.Union(b); got.Len() != 1 || !got.Accepts("gamma") {
		t.Error("empty ∪ b must equal b")
	}

	// Two unions from the same base must not share a backing array.
	base := NewTokenSet("base")
	u1, u2 := base.Union(NewTokenSet("one")), base.Union(NewTokenSet("two"))
	if !u1.Accepts("one") || u1.Accepts("two") || !u2.Accepts("two") || u2.Accepts("one") {
		t.Error("unions of one base interfere with each other")
	}
}

func TestIsToken68(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"abc", true},
		{"A", true},
		{"0", true},
		{"abcXYZ0189", true},
		{"-._~+/", true},
		{"a=", true},
		{"a==", true},
		{"abc=====", true},
		{"dGVzdA==", true},
		{"", false},
		{"=", false},
		{"==", false},
		{"=abc", false},
		{"a=b", false},
		{"ab==c", false},
		{"a= ", false},
		{"a b", false},
		{" ab", false},
		{"ab ", false},
		{"a\tb", false},
		{"a\nb", false},
		{"ab\x00", false},
		{"a,b", false},
		{`a"b`, false},
		{"a:b", false},
		{"a#b", false},
		{"a@b", false},
		{"a%20b", false},
		{"héllo", false},
		{"tökén", false},
		{"日本", false},
		{"a\u00a0b", false},
	}
	for _, tt := range tests {
		if got := IsToken68(tt.s); got != tt.want {
			t.Errorf("IsToken68(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestGenerateToken(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		tok, err := GenerateToken()
		if err != nil {
			t.Fatalf("GenerateToken: %v", err)
		}
		if len(tok) != 43 {
			t.Errorf("len(%q) = %d, want 43 (256 bits, unpadded base64)", tok, len(tok))
		}
		if !IsToken68(tok) {
			t.Errorf("%q is not token68", tok)
		}
		if strings.ContainsAny(tok, "=+/") {
			t.Errorf("%q is not URL-safe unpadded base64", tok)
		}
		if seen[tok] {
			t.Fatalf("GenerateToken returned %q twice", tok)
		}
		seen[tok] = true

		// A generated token round-trips through a token file.
		s, err := ParseTokens(strings.NewReader(tok+"\n"), time.Now())
		if err != nil || !s.Accepts(tok) {
			t.Errorf("generated token %q does not parse back: %v", tok, err)
		}
	}
}
