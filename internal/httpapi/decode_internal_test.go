package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzScanAgreesWithWalk checks that the fast scanner and the tokenizer walk
// read every valid body alike: the same fields, or the same refusal.
func FuzzScanAgreesWithWalk(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"name":"a"}`, `{"id":1,"name":"a","tag":null}`, ` { "id" : -0 , "name" : "x\"y" , "tag" : "" } `,
		`{"name":"a","id":1,"x":{"id":2,"name":[1,{"a":"}"}]},"y":[]}`, `{"n\u0061me":"a","name":"b"}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}`, `{"ID":1}`, `{"tAg":"x"}`, `[1]`, `"x"`, `{}`,
		`{"id":1e3,"name":"a"}`, `{"id":9223372036854775808,"name":"a"}`, `{"id":1,"name":"\ud800"}`, `{"id":1,"name":"\u00e9"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !utf8.Valid(body) || !json.Valid(body) {
			return
		}
		fast, fastErr := scanFields(body)
		slow, slowErr := walkFields(body)
		if (fastErr == nil) != (slowErr == nil) {
			t.Fatalf("%q: scan error %v, walk error %v", body, fastErr, slowErr)
		}
		if fastErr != nil {
			if fastErr.Code != slowErr.Code {
				t.Fatalf("%q: scan code %d, walk code %d", body, fastErr.Code, slowErr.Code)
			}
			return
		}
		for _, pair := range [][2][]byte{{fast.id, slow.id}, {fast.name, slow.name}, {fast.tag, slow.tag}} {
			if (pair[0] == nil) != (pair[1] == nil) || !bytes.Equal(pair[0], pair[1]) {
				t.Fatalf("%q: scan read %q, walk read %q", body, pair[0], pair[1])
			}
		}
	})
}
