package httpapi_test

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/httpapi"
	"github.com/plantstore/plantstore/internal/plant"
)

func ptr(s string) *string { return &s }

type decodeCase struct {
	name string
	body string
	// want is the decoded plant of a success; nil for a failure.
	want *plant.Plant
	// code is the error code of a failure.
	code apierror.Code
	// field is the field the message must name ("" for no check).
	field string
	// contains are further words the message must contain.
	contains []string
}

func ok(id int64, name string, tag *string) *plant.Plant {
	return &plant.Plant{ID: id, Name: name, Tag: tag}
}

var decodeCases = []decodeCase{
	// successes
	{name: "minimal", body: `{"id":1,"name":"Monstera"}`, want: ok(1, "Monstera", nil)},
	{name: "full", body: `{"id":10,"name":"Monstera deliciosa","tag":"tropical"}`, want: ok(10, "Monstera deliciosa", ptr("tropical"))},
	{name: "fields in another order", body: `{"tag":"t","name":"n","id":2}`, want: ok(2, "n", ptr("t"))},
	{name: "whitespace everywhere", body: " \t\r\n{ \"id\" : 3 ,\n\"name\"\t:\"x\" } \n\t\r ", want: ok(3, "x", nil)},
	{name: "tag null is absent", body: `{"id":1,"name":"a","tag":null}`, want: ok(1, "a", nil)},
	{name: "tag empty is present", body: `{"id":1,"name":"a","tag":""}`, want: ok(1, "a", ptr(""))},
	{name: "unknown scalar fields ignored", body: `{"id":1,"name":"a","color":"green","price":9.5,"ok":true,"n":null}`, want: ok(1, "a", nil)},
	{name: "unknown nested object ignored", body: `{"id":1,"extra":{"id":2,"name":"other","tag":"x","deep":{"a":[1,2,{"b":null}]}},"name":"a"}`, want: ok(1, "a", nil)},
	{name: "unknown nested array ignored", body: `{"id":1,"name":"a","list":[{"id":3,"name":"b"},[],[[{}]],"s",1e99]}`, want: ok(1, "a", nil)},
	{name: "duplicate keys inside an ignored object do not matter", body: `{"id":1,"name":"a","extra":{"k":1,"k":2}}`, want: ok(1, "a", nil)},
	{name: "id zero", body: `{"id":0,"name":"a"}`, want: ok(0, "a", nil)},
	{name: "id minus zero", body: `{"id":-0,"name":"a"}`, want: ok(0, "a", nil)},
	{name: "id negative", body: `{"id":-42,"name":"a"}`, want: ok(-42, "a", nil)},
	{name: "id max int64", body: `{"id":9223372036854775807,"name":"a"}`, want: ok(math.MaxInt64, "a", nil)},
	{name: "id min int64", body: `{"id":-9223372036854775808,"name":"a"}`, want: ok(math.MinInt64, "a", nil)},
	{name: "name of 200 code points", body: `{"id":1,"name":"` + strings.Repeat("a", 200) + `"}`, want: ok(1, strings.Repeat("a", 200), nil)},
	{name: "name of 200 emoji", body: `{"id":1,"name":"` + strings.Repeat("🌱", 200) + `"}`, want: ok(1, strings.Repeat("🌱", 200), nil)},
	{name: "name of 200 escaped emoji", body: `{"id":1,"name":"` + strings.Repeat(`\ud83c\udf31`, 200) + `"}`, want: ok(1, strings.Repeat("🌱", 200), nil)},
	{name: "tag of 100 code points", body: `{"id":1,"name":"a","tag":"` + strings.Repeat("é", 100) + `"}`, want: ok(1, "a", ptr(strings.Repeat("é", 100)))},
	{name: "surrogate pair escape", body: `{"id":1,"name":"\ud83c\udf31"}`, want: ok(1, "🌱", nil)},
	{name: "upper-case surrogate pair escape", body: `{"id":1,"name":"\uD83C\uDF31 Fern"}`, want: ok(1, "🌱 Fern", nil)},
	{name: "escaped characters", body: `{"id":1,"name":"Rose \u0026 Ivy \"q\" a\/b back\\slash \u00e9"}`, want: ok(1, `Rose & Ivy "q" a/b back\slash é`, nil)},
	{name: "escaped backslash before u is not a surrogate escape", body: `{"id":1,"name":"\\ud800"}`, want: ok(1, `\ud800`, nil)},
	{name: "raw HTML characters", body: `{"id":1,"name":"<b>Rose & Ivy</b>"}`, want: ok(1, "<b>Rose & Ivy</b>", nil)},
	{name: "raw non-ASCII", body: `{"id":1,"name":"Ficus lyrata 🌿","tag":"植物"}`, want: ok(1, "Ficus lyrata 🌿", ptr("植物"))},
	{name: "escaped key names the field", body: `{"\u0069d":5,"n\u0061me":"a"}`, want: ok(5, "a", nil)},
	{name: "U+2028 and U+2029 are not control characters", body: "{\"id\":1,\"name\":\"a\u2028b\u2029c\"}", want: ok(1, "a\u2028b\u2029c", nil)},
	{name: "lone surrogate in an ignored field is ignored", body: `{"id":1,"name":"a","other":"\ud800"}`, want: ok(1, "a", nil)},
	{name: "key that is empty", body: `{"":0,"id":1,"name":"a"}`, want: ok(1, "a", nil)},

	// malformed JSON: 40001
	{name: "empty body", body: ``, code: apierror.MalformedJSON, contains: []string{"empty"}},
	{name: "whitespace body", body: " \n\t\r ", code: apierror.MalformedJSON, contains: []string{"empty"}},
	{name: "array", body: `[{"id":1,"name":"a"}]`, code: apierror.MalformedJSON, contains: []string{"object", "array"}},
	{name: "empty array", body: `[]`, code: apierror.MalformedJSON, contains: []string{"object"}},
	{name: "string", body: `"{\"id\":1,\"name\":\"a\"}"`, code: apierror.MalformedJSON, contains: []string{"object", "string"}},
	{name: "number", body: `42`, code: apierror.MalformedJSON, contains: []string{"object", "number"}},
	{name: "null", body: `null`, code: apierror.MalformedJSON, contains: []string{"object", "null"}},
	{name: "boolean", body: `true`, code: apierror.MalformedJSON, contains: []string{"object", "boolean"}},
	{name: "closing brace only", body: `}`, code: apierror.MalformedJSON},
	{name: "second object", body: `{"id":1,"name":"a"}{"id":2,"name":"b"}`, code: apierror.MalformedJSON, contains: []string{"after"}},
	{name: "second object after whitespace", body: "{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"name\":\"b\"}", code: apierror.MalformedJSON, contains: []string{"after"}},
	{name: "trailing garbage", body: `{"id":1,"name":"a"}x`, code: apierror.MalformedJSON, contains: []string{"after"}},
	{name: "trailing number", body: `{"id":1,"name":"a"} 1`, code: apierror.MalformedJSON, contains: []string{"after"}},
	{name: "trailing brace", body: `{"id":1,"name":"a"}}`, code: apierror.MalformedJSON, contains: []string{"after"}},
	{name: "trailing NUL byte", body: "{\"id\":1,\"name\":\"a\"}\x00", code: apierror.MalformedJSON},
	{name: "truncated", body: `{"id":1,"name":"a"`, code: apierror.MalformedJSON},
	{name: "truncated after comma", body: `{"id":1,`, code: apierror.MalformedJSON},
	{name: "truncated string", body: `{"id":1,"name":"a`, code: apierror.MalformedJSON},
	{name: "trailing comma", body: `{"id":1,"name":"a",}`, code: apierror.MalformedJSON},
	{name: "leading comma", body: `{,"id":1,"name":"a"}`, code: apierror.MalformedJSON},
	{name: "missing comma", body: `{"id":1 "name":"a"}`, code: apierror.MalformedJSON},
	{name: "missing colon", body: `{"id" 1,"name":"a"}`, code: apierror.MalformedJSON},
	{name: "single quotes", body: `{'id':1,'name':'a'}`, code: apierror.MalformedJSON},
	{name: "unquoted key", body: `{id:1,"name":"a"}`, code: apierror.MalformedJSON},
	{name: "number key", body: `{1:1}`, code: apierror.MalformedJSON},
	{name: "mismatched bracket", body: `{"id":1,"name":"a"]`, code: apierror.MalformedJSON},
	{name: "comment", body: `{"id":1,/*x*/"name":"a"}`, code: apierror.MalformedJSON},
	{name: "byte order mark", body: "\ufeff{\"id\":1,\"name\":\"a\"}", code: apierror.MalformedJSON},
	{name: "invalid UTF-8 in name", body: "{\"id\":1,\"name\":\"a\xffb\"}", code: apierror.MalformedJSON, contains: []string{"UTF-8"}},
	{name: "invalid UTF-8 in an ignored field", body: "{\"id\":1,\"name\":\"a\",\"x\":\"\xc3\"}", code: apierror.MalformedJSON, contains: []string{"UTF-8"}},
	{name: "invalid UTF-8 in a key", body: "{\"id\":1,\"name\":\"a\",\"\xfe\":1}", code: apierror.MalformedJSON, contains: []string{"UTF-8"}},
	{name: "UTF-8 encoded surrogate", body: "{\"id\":1,\"name\":\"\xed\xa0\x80\"}", code: apierror.MalformedJSON, contains: []string{"UTF-8"}},
	{name: "raw newline inside a string", body: "{\"id\":1,\"name\":\"a\nb\"}", code: apierror.MalformedJSON},
	{name: "raw NUL inside a string", body: "{\"id\":1,\"name\":\"a\x00b\"}", code: apierror.MalformedJSON},
	{name: "invalid escape", body: `{"id":1,"name":"\x41"}`, code: apierror.MalformedJSON},
	{name: "short unicode escape", body: `{"id":1,"name":"\u12"}`, code: apierror.MalformedJSON},
	{name: "leading zero in id", body: `{"id":01,"name":"a"}`, code: apierror.MalformedJSON},
	{name: "plus sign in id", body: `{"id":+1,"name":"a"}`, code: apierror.MalformedJSON},
	{name: "hex id", body: `{"id":0x10,"name":"a"}`, code: apierror.MalformedJSON},
	{name: "NaN id", body: `{"id":NaN,"name":"a"}`, code: apierror.MalformedJSON},

	// required field missing: 40002
	{name: "empty object", body: `{}`, code: apierror.MissingField, field: "id"},
	{name: "id missing", body: `{"name":"a"}`, code: apierror.MissingField, field: "id", contains: []string{"required"}},
	{name: "name missing", body: `{"id":1}`, code: apierror.MissingField, field: "name", contains: []string{"required"}},
	{name: "name missing with tag", body: `{"id":1,"tag":"t"}`, code: apierror.MissingField, field: "name"},
	{name: "ID is a case variant", body: `{"ID":1,"name":"a"}`, code: apierror.CaseVariantKey, field: "id"},
	{name: "Id is a case variant", body: `{"Id":1,"name":"a"}`, code: apierror.CaseVariantKey, field: "id"},
	{name: "Name is a case variant", body: `{"id":1,"Name":"a"}`, code: apierror.CaseVariantKey, field: "name"},
	{name: "NAME is a case variant", body: `{"id":1,"NAME":"a"}`, code: apierror.CaseVariantKey, field: "name"},
	{name: "key with trailing space is another field", body: `{"id ":1,"name":"a"}`, code: apierror.MissingField, field: "id"},
	{name: "nested id does not count", body: `{"plant":{"id":1,"name":"a"}}`, code: apierror.MissingField, field: "id"},

	// wrong type: 40003
	{name: "id string", body: `{"id":"1","name":"a"}`, code: apierror.WrongType, field: "id", contains: []string{"string"}},
	{name: "id float 1.0", body: `{"id":1.0,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id fraction", body: `{"id":1.5,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id exponent 1e3", body: `{"id":1e3,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id exponent 1E3", body: `{"id":1E3,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id exponent 1e0", body: `{"id":1e0,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id exponent negative", body: `{"id":-1e-0,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id huge exponent", body: `{"id":1e400,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id true", body: `{"id":true,"name":"a"}`, code: apierror.WrongType, field: "id", contains: []string{"boolean"}},
	{name: "id false", body: `{"id":false,"name":"a"}`, code: apierror.WrongType, field: "id"},
	{name: "id null", body: `{"id":null,"name":"a"}`, code: apierror.WrongType, field: "id", contains: []string{"null"}},
	{name: "id object", body: `{"id":{},"name":"a"}`, code: apierror.WrongType, field: "id", contains: []string{"object"}},
	{name: "id array", body: `{"id":[1],"name":"a"}`, code: apierror.WrongType, field: "id", contains: []string{"array"}},
	{name: "name null", body: `{"id":1,"name":null}`, code: apierror.WrongType, field: "name", contains: []string{"null"}},
	{name: "name number", body: `{"id":1,"name":42}`, code: apierror.WrongType, field: "name", contains: []string{"number"}},
	{name: "name boolean", body: `{"id":1,"name":true}`, code: apierror.WrongType, field: "name"},
	{name: "name array", body: `{"id":1,"name":["a"]}`, code: apierror.WrongType, field: "name", contains: []string{"array"}},
	{name: "name object", body: `{"id":1,"name":{"x":"a"}}`, code: apierror.WrongType, field: "name", contains: []string{"object"}},
	{name: "tag number", body: `{"id":1,"name":"a","tag":1}`, code: apierror.WrongType, field: "tag", contains: []string{"number"}},
	{name: "tag boolean", body: `{"id":1,"name":"a","tag":false}`, code: apierror.WrongType, field: "tag"},
	{name: "tag array", body: `{"id":1,"name":"a","tag":[]}`, code: apierror.WrongType, field: "tag"},
	{name: "tag object", body: `{"id":1,"name":"a","tag":{}}`, code: apierror.WrongType, field: "tag"},

	// out of range: 40004
	{name: "id one above max int64", body: `{"id":9223372036854775808,"name":"a"}`, code: apierror.OutOfRange, field: "id", contains: []string{"int64"}},
	{name: "id one below min int64", body: `{"id":-9223372036854775809,"name":"a"}`, code: apierror.OutOfRange, field: "id", contains: []string{"int64"}},
	{name: "id of 400 digits", body: `{"id":` + strings.Repeat("9", 400) + `,"name":"a"}`, code: apierror.OutOfRange, field: "id"},
	{name: "name empty", body: `{"id":1,"name":""}`, code: apierror.OutOfRange, field: "name", contains: []string{"1 to 200", "got 0"}},
	{name: "name of 201 code points", body: `{"id":1,"name":"` + strings.Repeat("a", 201) + `"}`, code: apierror.OutOfRange, field: "name", contains: []string{"got 201"}},
	{name: "name of 201 emoji", body: `{"id":1,"name":"` + strings.Repeat("🌱", 201) + `"}`, code: apierror.OutOfRange, field: "name", contains: []string{"got 201"}},
	{name: "name of 201 escaped code points", body: `{"id":1,"name":"` + strings.Repeat(`\u00e9`, 201) + `"}`, code: apierror.OutOfRange, field: "name", contains: []string{"got 201"}},
	{name: "tag of 101 code points", body: `{"id":1,"name":"a","tag":"` + strings.Repeat("t", 101) + `"}`, code: apierror.OutOfRange, field: "tag", contains: []string{"0 to 100", "got 101"}},
	{name: "tag of 101 emoji", body: `{"id":1,"name":"a","tag":"` + strings.Repeat("🌱", 101) + `"}`, code: apierror.OutOfRange, field: "tag"},

	// duplicate keys: 40005
	{name: "id twice", body: `{"id":1,"name":"a","id":2}`, code: apierror.DuplicateKey, field: "id", contains: []string{"duplicate"}},
	{name: "id twice, same value", body: `{"id":1,"id":1,"name":"a"}`, code: apierror.DuplicateKey, field: "id"},
	{name: "name twice", body: `{"id":1,"name":"a","name":"b"}`, code: apierror.DuplicateKey, field: "name"},
	{name: "name twice, identical", body: `{"id":1,"name":"a","name":"a"}`, code: apierror.DuplicateKey, field: "name"},
	{name: "tag twice", body: `{"id":1,"name":"a","tag":"x","tag":null}`, code: apierror.DuplicateKey, field: "tag"},
	{name: "ignored field twice", body: `{"id":1,"name":"a","x":1,"x":1}`, code: apierror.DuplicateKey, contains: []string{`"x"`}},
	{name: "duplicate through an escape", body: `{"id":1,"name":"a","n\u0061me":"b"}`, code: apierror.DuplicateKey, field: "name"},
	{name: "duplicate of an invalid value", body: `{"id":"x","id":1,"name":"a"}`, code: apierror.DuplicateKey, field: "id"},
	// Case-insensitive parsers (encoding/json among them) read a case variant
	// as the field itself, so a case variant is refused, alone or beside the
	// field, with a message naming both spellings.
	{name: "name and NAME", body: `{"id":1,"name":"a","NAME":"b"}`, code: apierror.CaseVariantKey, field: "NAME", contains: []string{`"name"`}},
	{name: "Name and name", body: `{"id":1,"Name":"b","name":"a"}`, code: apierror.CaseVariantKey, field: "Name"},
	{name: "id and ID", body: `{"id":1,"ID":2,"name":"a"}`, code: apierror.CaseVariantKey, field: "ID"},
	{name: "Id and iD", body: `{"Id":1,"iD":2,"name":"a"}`, code: apierror.CaseVariantKey, field: "Id"},
	{name: "tag and TAG", body: `{"id":1,"name":"a","tag":"x","TAG":"y"}`, code: apierror.CaseVariantKey, field: "TAG"},
	{name: "lone Tag", body: `{"id":1,"name":"a","Tag":"y"}`, code: apierror.CaseVariantKey, field: "Tag", contains: []string{"case-sensitive"}},
	{name: "tAg through an escape", body: `{"id":1,"name":"a","t\u0041g":"y"}`, code: apierror.CaseVariantKey, field: "tAg"},

	// forbidden characters: 40006
	{name: "name with escaped NUL", body: `{"id":1,"name":"a\u0000b"}`, code: apierror.BadCharacters, field: "name", contains: []string{"U+0000"}},
	{name: "name with escaped newline", body: `{"id":1,"name":"a\nb"}`, code: apierror.BadCharacters, field: "name", contains: []string{"U+000A"}},
	{name: "name with escaped tab", body: `{"id":1,"name":"\tx"}`, code: apierror.BadCharacters, field: "name"},
	{name: "name with escaped U+001F", body: `{"id":1,"name":"\u001f"}`, code: apierror.BadCharacters, field: "name"},
	{name: "name with raw DEL", body: "{\"id\":1,\"name\":\"a\x7fb\"}", code: apierror.BadCharacters, field: "name", contains: []string{"U+007F"}},
	{name: "name with escaped DEL", body: `{"id":1,"name":"\u007f"}`, code: apierror.BadCharacters, field: "name"},
	{name: "name with raw NEL U+0085", body: "{\"id\":1,\"name\":\"a\u0085\"}", code: apierror.BadCharacters, field: "name", contains: []string{"U+0085"}},
	{name: "name with escaped U+0085", body: `{"id":1,"name":"\u0085"}`, code: apierror.BadCharacters, field: "name"},
	{name: "tag with escaped NUL", body: `{"id":1,"name":"a","tag":"\u0000"}`, code: apierror.BadCharacters, field: "tag"},
	{name: "tag with escaped carriage return", body: `{"id":1,"name":"a","tag":"x\r"}`, code: apierror.BadCharacters, field: "tag"},
	{name: "lone high surrogate", body: `{"id":1,"name":"\ud800"}`, code: apierror.BadCharacters, field: "name", contains: []string{"surrogate"}},
	{name: "lone low surrogate", body: `{"id":1,"name":"\udc00"}`, code: apierror.BadCharacters, field: "name", contains: []string{"surrogate"}},
	{name: "high surrogate then letter", body: `{"id":1,"name":"\ud800x"}`, code: apierror.BadCharacters, field: "name"},
	{name: "high surrogate then high surrogate", body: `{"id":1,"name":"\ud800\ud800"}`, code: apierror.BadCharacters, field: "name"},
	{name: "high surrogate then other escape", body: `{"id":1,"name":"\ud800\u0041"}`, code: apierror.BadCharacters, field: "name"},
	{name: "high surrogate then escaped newline", body: `{"id":1,"name":"\ud83c\n"}`, code: apierror.BadCharacters, field: "name"},
	{name: "surrogates in the wrong order", body: `{"id":1,"name":"\udf31\ud83c"}`, code: apierror.BadCharacters, field: "name"},
	{name: "valid pair then lone high surrogate", body: `{"id":1,"name":"\ud83c\udf31\ud83c"}`, code: apierror.BadCharacters, field: "name"},
	{name: "lone surrogate at the end of a long name", body: `{"id":1,"name":"` + strings.Repeat("a", 50) + `\udbff"}`, code: apierror.BadCharacters, field: "name"},
	{name: "lone surrogate in tag", body: `{"id":1,"name":"a","tag":"\udfff"}`, code: apierror.BadCharacters, field: "tag"},
	{name: "lone surrogate after escaped backslash", body: `{"id":1,"name":"\\\ud800"}`, code: apierror.BadCharacters, field: "name"},
}

// names reports whether msg names field as a word of its own.
func names(msg, field string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z])` + regexp.QuoteMeta(field) + `([^A-Za-z]|$)`).MatchString(msg)
}

func TestDecodeNewPlant(t *testing.T) {
	if len(decodeCases) < 40 {
		t.Fatalf("only %d cases", len(decodeCases))
	}
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			checkDecode(t, tc)
		})
	}
}

func checkDecode(t *testing.T, tc decodeCase) {
	t.Helper()
	got, e := httpapi.DecodeNewPlant([]byte(tc.body))
	if tc.want != nil {
		if e != nil {
			t.Fatalf("DecodeNewPlant(%s) failed: %d %s", tc.body, e.Code, e.Message)
		}
		if got.ID != tc.want.ID {
			t.Errorf("ID = %d, want %d", got.ID, tc.want.ID)
		}
		if got.Name != tc.want.Name {
			t.Errorf("Name = %q, want %q", got.Name, tc.want.Name)
		}
		switch {
		case tc.want.Tag == nil && got.Tag != nil:
			t.Errorf("Tag = %q, want nil", *got.Tag)
		case tc.want.Tag != nil && got.Tag == nil:
			t.Errorf("Tag = nil, want %q", *tc.want.Tag)
		case tc.want.Tag != nil && *got.Tag != *tc.want.Tag:
			t.Errorf("Tag = %q, want %q", *got.Tag, *tc.want.Tag)
		}
		if err := plant.Validate(got); err != nil {
			t.Errorf("decoded plant is not valid: %v", err)
		}
		return
	}
	if e == nil {
		t.Fatalf("DecodeNewPlant(%q) = %+v, want error %d", tc.body, got, tc.code)
	}
	if e.Code != tc.code {
		t.Errorf("code = %d (%s), want %d", e.Code, e.Message, tc.code)
	}
	if e.Code.Status() != 400 {
		t.Errorf("status of code %d = %d, want 400", e.Code, e.Code.Status())
	}
	if strings.TrimSpace(e.Message) == "" {
		t.Error("message is empty")
	}
	if tc.field != "" && !names(e.Message, tc.field) {
		t.Errorf("message %q does not name the field %q", e.Message, tc.field)
	}
	for _, w := range tc.contains {
		if !strings.Contains(e.Message, w) {
			t.Errorf("message %q does not contain %q", e.Message, w)
		}
	}
	if got.ID != 0 || got.Name != "" || got.Tag != nil {
		t.Errorf("a failure returned a non-zero plant %+v", got)
	}
}

// TestDecodeNewPlantManyKeys: a body at the size limit made of thousands of
// distinct ignored keys is still one valid object (and is decoded in linear
// time; see BenchmarkDecodeNewPlantManyKeys).
func TestDecodeNewPlantManyKeys(t *testing.T) {
	body := manyKeysBody()
	p, e := httpapi.DecodeNewPlant(body)
	if e != nil {
		t.Fatalf("DecodeNewPlant failed: %d %s", e.Code, e.Message)
	}
	if p.ID != 1 || p.Name != "a" || p.Tag != nil {
		t.Errorf("got %+v", p)
	}
	// The same body with one key repeated at its end is a duplicate.
	dup := append(bytes.TrimSuffix(body, []byte("}")), []byte(`,"0":0}`)...)
	if _, e := httpapi.DecodeNewPlant(dup); e == nil || e.Code != apierror.DuplicateKey {
		t.Errorf("repeated key at the end: got %v, want 40005", e)
	}
}

func manyKeysBody() []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":1,"name":"a"`)
	for i := 0; b.Len() < httpapi.MaxBodyBytes-16; i++ {
		fmt.Fprintf(&b, `,"%x":0`, i)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

func BenchmarkDecodeNewPlantManyKeys(b *testing.B) {
	body := manyKeysBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, e := httpapi.DecodeNewPlant(body); e != nil {
			b.Fatal(e)
		}
	}
}

func BenchmarkDecodeNewPlant(b *testing.B) {
	body := []byte(`{"id":10,"name":"Monstera deliciosa","tag":"tropical"}`)
	for b.Loop() {
		if _, e := httpapi.DecodeNewPlant(body); e != nil {
			b.Fatal(e)
		}
	}
}

// TestDecodeNewPlantCopies: the decoded plant shares no bytes with the
// body, whose buffer the create handler reuses for the next request as
// soon as the body is decoded. Both the plain and the escaped forms of a
// string are checked.
func TestDecodeNewPlantCopies(t *testing.T) {
	for _, body := range []string{
		`{"id":7,"name":"Monstera","tag":"tropical"}`,
		`{"id":7,"name":"Mon\u0073tera","tag":"trop\u0069cal"}`,
	} {
		b := []byte(body)
		p, e := httpapi.DecodeNewPlant(b)
		if e != nil {
			t.Fatalf("%s: %v", body, e)
		}
		for i := range b {
			b[i] = 'x'
		}
		if p.Name != "Monstera" || p.Tag == nil || *p.Tag != "tropical" {
			t.Errorf("%s: after the body's bytes were overwritten the plant is %q, %v", body, p.Name, p.Tag)
		}
	}
}
