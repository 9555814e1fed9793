package client

import "testing"

func TestNextLink(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		target string
		ok     bool
		bad    bool
	}{
		{name: "the service's", values: []string{`</plants?cursor=AQAAAAAAAAAK1cidaw&limit=20>; rel="next"`}, target: "/plants?cursor=AQAAAAAAAAAK1cidaw&limit=20", ok: true},
		{name: "no header", values: nil},
		{name: "token value", values: []string{`</a>;rel=next`}, target: "/a", ok: true},
		{name: "case-insensitive", values: []string{`</a> ; REL="NeXt"`}, target: "/a", ok: true},
		{name: "one of several relation types", values: []string{`</a>; rel="last next"`}, target: "/a", ok: true},
		{name: "second link of a list", values: []string{`</p>; rel="prev", </n>; rel="next"`}, target: "/n", ok: true},
		{name: "second header value", values: []string{`</p>; rel="prev"`, `</n>; rel="next"`}, target: "/n", ok: true},
		{name: "comma inside the URI", values: []string{`</a?x=1,2>; rel="next"`}, target: "/a?x=1,2", ok: true},
		{name: "comma and semicolon in a quoted parameter", values: []string{`</a>; title="a, b; rel=next", </b>; rel="next"`}, target: "/b", ok: true},
		{name: "escaped quote", values: []string{`</a>; title="say \"hi\"" ; rel=next`}, target: "/a", ok: true},
		{name: "other relations only", values: []string{`</a>; rel="prev", </b>; rel="nextish"`}},
		{name: "rel without a value", values: []string{`</a>; rel`}},
		{name: "first rel counts", values: []string{`</a>; rel="prev"; rel="next"`}},
		{name: "empty elements", values: []string{` , </a>; rel="next" ,`}, target: "/a", ok: true},
		{name: "no angle brackets", values: []string{`/a; rel="next"`}, bad: true},
		{name: "unterminated URI", values: []string{`</a; rel="next"`}, bad: true},
		{name: "unterminated quote", values: []string{`</a>; rel="next`}, bad: true},
		{name: "junk after the URI", values: []string{`</a> rel="next"`}, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target, ok, err := nextLink(tc.values)
			if (err != nil) != tc.bad {
				t.Fatalf("error %v, want error: %v", err, tc.bad)
			}
			if target != tc.target || ok != tc.ok {
				t.Fatalf("nextLink = %q, %v; want %q, %v", target, ok, tc.target, tc.ok)
			}
		})
	}
}
