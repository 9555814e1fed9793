package httpapi

import (
	"strings"
	"testing"
)

// FuzzDecoderAgreesWithLegacy checks that the jsontext decoder answers every
// body as the hand-written one did: the same plant, or the same code and
// message. A syntax error's detail (what the parser expected, where it
// stopped) comes from the parser, so for those only the code is compared.
func FuzzDecoderAgreesWithLegacy(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"name":"a"}`, `{"id":1,"name":"a","tag":null}`, ` { "id" : -0 , "name" : "x\"y" , "tag" : "" } `,
		`{"name":"a","id":1,"x":{"id":2,"name":[1,{"a":"}"}]},"y":[]}`, `{"n\u0061me":"a","name":"b"}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}`, `{"ID":1}`, `{"tAg":"x"}`, `[1]`, `"x"`, `{}`,
		`{"id":1e3,"name":"a"}`, `{"id":9223372036854775808,"name":"a"}`, `{"id":1,"name":"\ud800"}`, `{"id":1,"name":"\u00e9"}`,
		`{"id":1,"name":"a"} x`, `{"id":1,"name":"a"}{}`, `{"id":1,`, `{"id":1,"id":2,`, `{"x":"\ud800","id":1,"name":"a"}`,
		`{"\ud800":1,"\udc00":2}`, `{"id":01}`, `{"id":1,"name":"a",}`, "\xff", `{"a":{"k":1,"k":2},"id":1,"name":"b"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := DecodeNewPlant(body)
		want, wantErr := legacyDecodeNewPlant(body)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, legacy error %v", body, gotErr, wantErr)
		}
		if gotErr == nil {
			if got.ID != want.ID || got.Name != want.Name || (got.Tag == nil) != (want.Tag == nil) ||
				got.Tag != nil && *got.Tag != *want.Tag {
				t.Fatalf("%q: read %+v, legacy read %+v", body, got, want)
			}
			return
		}
		if gotErr.Code != wantErr.Code {
			t.Fatalf("%q: code %d (%s), legacy code %d (%s)", body, gotErr.Code, gotErr.Message, wantErr.Code, wantErr.Message)
		}
		const syntax = "malformed JSON"
		if strings.HasPrefix(wantErr.Message, syntax) && strings.HasPrefix(gotErr.Message, syntax) {
			return
		}
		if gotErr.Message != wantErr.Message {
			t.Fatalf("%q: message %q, legacy message %q", body, gotErr.Message, wantErr.Message)
		}
	})
}
