package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
)

// FuzzDecodeNewPlant checks the properties of the strict decoder on any
// input: it never panics; a failure is a 400 code with a message; a success
// is a valid plant that survives a round trip through encoding/json, and that
// encoding/json reads from the same bytes as the same id, name and tag.
func FuzzDecodeNewPlant(f *testing.F) {
	seeds := []string{
		`{"id":1,"name":"Monstera"}`,
		`{"id":10,"name":"Monstera deliciosa","tag":"tropical"}`,
		`{"id":1,"name":"a","tag":null}`,
		`{"id":1,"name":"a","tag":""}`,
		`{"id":-9223372036854775808,"name":"a"}`,
		`{"id":9223372036854775807,"name":"a"}`,
		`{"id":9223372036854775808,"name":"a"}`,
		`{"id":-0,"name":"a"}`,
		`{"id":1.0,"name":"a"}`,
		`{"id":1e3,"name":"a"}`,
		`{"id":"1","name":"a"}`,
		`{"id":1,"name":"a","id":1}`,
		`{"id":1,"name":"a","NAME":"b"}`,
		`{"ID":1,"name":"a"}`,
		`{"id":1,"name":"a","extra":{"id":2,"name":"b","x":[1,{"y":null}]}}`,
		`{"id":1,"name":"\ud83c\udf31"}`,
		`{"id":1,"name":"\ud800"}`,
		`{"id":1,"name":"\ud800\ud800"}`,
		`{"id":1,"name":"a\u0000b"}`,
		`{"id":1,"name":"Rose \u0026 <Ivy>","tag":"\"q\" \\ \/"}`,
		"{\"id\":1,\"name\":\"a\x7f\u0085\"}",
		"{\"id\":1,\"name\":\"\xff\"}",
		`{"id":1,"name":"a"} {"id":2,"name":"b"}`,
		`{"id":1,"name":"a"}` + " \n\t",
		`[{"id":1,"name":"a"}]`,
		``,
		`null`,
		`{"id":1,"name":"` + strings.Repeat("🌱", 200) + `"}`,
		`{"id":1,"name":"a","tag":"` + strings.Repeat("t", 101) + `"}`,
		`{"\u0069d":1,"name":"a"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, e := httpapi.DecodeNewPlant(body)
		if e != nil {
			if e.Code < apierror.MalformedJSON || e.Code > apierror.CaseVariantKey {
				t.Fatalf("error code %d is not one of 40001..40007 (%s)", e.Code, e.Message)
			}
			if strings.TrimSpace(e.Message) == "" {
				t.Fatalf("error %d has an empty message", e.Code)
			}
			if p.ID != 0 || p.Name != "" || p.Tag != nil {
				t.Fatalf("a failure returned the plant %+v", p)
			}
			return
		}

		if err := plant.Validate(p); err != nil {
			t.Fatalf("decoded plant %+v is not valid: %v", p, err)
		}

		// Round trip: encoding/json writes the plant, the decoder reads it back.
		again, err := json.Marshal(struct {
			ID   int64   `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag"`
		}{p.ID, p.Name, p.Tag})
		if err != nil {
			t.Fatalf("encoding %+v: %v", p, err)
		}
		q, e := httpapi.DecodeNewPlant(again)
		if e != nil {
			t.Fatalf("re-encoded plant %s does not decode: %d %s", again, e.Code, e.Message)
		}
		if q.ID != p.ID || !q.SameContent(p) {
			t.Fatalf("round trip changed the plant: %+v (tag %v) -> %s -> %+v (tag %v)", p, deref(p.Tag), again, q, deref(q.Tag))
		}

		// Two parsers agree: encoding/json reads the same id, name and tag
		// from the body the strict decoder accepted.
		var other struct {
			ID   int64   `json:"id"`
			Name string  `json:"name"`
			Tag  *string `json:"tag"`
		}
		if err := json.Unmarshal(body, &other); err != nil {
			t.Fatalf("encoding/json rejects %q, which DecodeNewPlant accepted as %+v: %v", body, p, err)
		}
		if other.ID != p.ID || other.Name != p.Name {
			t.Fatalf("parsers disagree on %q: DecodeNewPlant id %d name %q, encoding/json id %d name %q",
				body, p.ID, p.Name, other.ID, other.Name)
		}
		if !tagEqual(other.Tag, p.Tag) {
			t.Fatalf("parsers disagree on the tag of %q: DecodeNewPlant %v, encoding/json %v", body, deref(p.Tag), deref(other.Tag))
		}
	})
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
