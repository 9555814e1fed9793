package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/plant"
)

// MaxBodyBytes is the largest request body the API reads (contract: 64 KiB).
const MaxBodyBytes = 64 << 10

// fields are the keys of a NewPlant.
var fields = [...]string{"id", "name", "tag"}

// DecodeNewPlant parses a NewPlant request body and validates it. It reads the
// body strictly, so that no other JSON parser could read the same bytes as a
// different plant: one object and nothing after it, valid UTF-8, no duplicate
// keys, no case variant of id, name or tag (encoding/json and other parsers
// match keys case-insensitively and would read "Name" as the name), id an
// integer literal within int64. Unknown fields are ignored.
//
// A body that encoding/json finds valid is split into fields by a scanner
// that allocates next to nothing; any other body goes through a slower walk
// with encoding/json's tokenizer, whose only job is to say precisely what is
// wrong. A fuzz test checks that both read every valid body alike.
func DecodeNewPlant(body []byte) (plant.Plant, *apierror.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON,
			`request body is empty: send a JSON object such as {"id": 1, "name": "Monstera"}`)
	}
	if !utf8.Valid(body) {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON, "request body is not valid UTF-8")
	}
	var f rawFields
	var e *apierror.Error
	if json.Valid(body) {
		f, e = scanFields(body)
	} else {
		f, e = walkFields(body)
		if e == nil { // cannot happen: the walk refuses what json.Valid refuses
			e = apierror.New(apierror.MalformedJSON, "malformed JSON")
		}
	}
	if e != nil {
		return plant.Plant{}, e
	}
	return buildPlant(f)
}

// rawFields are the JSON values of the fields a NewPlant has; nil when absent.
type rawFields struct {
	id, name, tag []byte
}

func (f *rawFields) set(key string, raw []byte) {
	switch key {
	case "id":
		f.id = raw
	case "name":
		f.name = raw
	case "tag":
		f.tag = raw
	}
}

// keyProblem refuses a case variant of a field name.
func keyProblem(key string) *apierror.Error {
	for _, f := range fields {
		if key != f && strings.EqualFold(key, f) {
			return apierror.New(apierror.CaseVariantKey,
				"key "+quoteShort(key)+" is a case variant of the field \""+f+"\": field names are case-sensitive, send \""+f+"\"")
		}
	}
	return nil
}

func duplicateKey(key string) *apierror.Error {
	return apierror.New(apierror.DuplicateKey,
		"duplicate key "+quoteShort(key)+" in the object: each key may appear once")
}

// scanFields splits a body that json.Valid accepted into its top-level
// fields. Syntax errors cannot occur, so the scan only finds where each key
// and value ends.
func scanFields(body []byte) (rawFields, *apierror.Error) {
	var f rawFields
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return f, apierror.New(apierror.MalformedJSON, "request body must be a JSON object, got "+rawKind(body[i:]))
	}
	// Objects are small: compare the first keys directly, and only build a
	// map for bodies with many (a 64 KiB body can hold thousands, and a
	// quadratic scan of them would cost a lot of CPU).
	var first [8][]byte
	var seen map[string]struct{}
	n := 0
	i = skipSpace(body, i+1)
	for body[i] != '}' {
		keyEnd := stringEnd(body, i)
		key := body[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			_ = json.Unmarshal(body[i:keyEnd], &k) // valid: json.Valid said so
			key = []byte(k)
		}
		if n < len(first) {
			for _, k := range first[:n] {
				if bytes.Equal(k, key) {
					return f, duplicateKey(string(key))
				}
			}
			first[n] = key
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(first))
				for _, k := range first {
					seen[string(k)] = struct{}{}
				}
			}
			if _, dup := seen[string(key)]; dup {
				return f, duplicateKey(string(key))
			}
			seen[string(key)] = struct{}{}
		}
		n++
		if len(key) <= len("name") { // only short keys can be a field or a variant
			if e := keyProblem(string(key)); e != nil {
				return f, e
			}
		}
		i = skipSpace(body, keyEnd) + 1 // past the colon
		i = skipSpace(body, i)
		valueEnd := valueEnd(body, i)
		if len(key) <= len("name") {
			f.set(string(key), body[i:valueEnd])
		}
		i = skipSpace(body, valueEnd)
		if body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	return f, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal starting at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// valueEnd returns the index just past the value starting at i.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; ; {
			switch b[j] {
			case '"':
				j = stringEnd(b, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
	default: // a number, true, false or null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j
	}
}

// walkFields reads the body with encoding/json's tokenizer, reporting the
// first problem in the order a reader meets it. It serves bodies json.Valid
// refused, to say what is wrong with them.
func walkFields(body []byte) (rawFields, *apierror.Error) {
	var f rawFields
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return f, malformed(err)
	}
	if tok != json.Delim('{') {
		return f, apierror.New(apierror.MalformedJSON,
			"request body must be a JSON object, got "+tokenKind(tok))
	}
	seen := make(map[string]struct{})
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return f, malformed(err)
		}
		key, _ := tok.(string) // the decoder guarantees a string in key position
		if _, dup := seen[key]; dup {
			return f, duplicateKey(key)
		}
		seen[key] = struct{}{}
		if e := keyProblem(key); e != nil {
			return f, e
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return f, malformed(err)
		}
		f.set(key, raw)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return f, malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return f, apierror.New(apierror.MalformedJSON,
			"unexpected content after the JSON object: send exactly one object")
	}
	return f, nil
}

// buildPlant checks the fields' types and values and makes the plant.
func buildPlant(f rawFields) (plant.Plant, *apierror.Error) {
	var p plant.Plant
	var err error
	if p.ID, err = decodeID(f.id); err != nil {
		return plant.Plant{}, asAPIError(err)
	}
	name, err := decodeString("name", f.name, true)
	if err != nil {
		return plant.Plant{}, asAPIError(err)
	}
	p.Name = *name
	if p.Tag, err = decodeString("tag", f.tag, false); err != nil {
		return plant.Plant{}, asAPIError(err)
	}
	if err := plant.Validate(p); err != nil {
		var ve *plant.ValidationError
		if errors.As(err, &ve) && ve.Problem == plant.BadCharacters {
			return plant.Plant{}, apierror.New(apierror.BadCharacters, ve.Message)
		}
		return plant.Plant{}, apierror.New(apierror.OutOfRange, err.Error())
	}
	return p, nil
}

func asAPIError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierror.New(apierror.MalformedJSON, err.Error())
}

func decodeID(raw json.RawMessage) (int64, error) {
	if raw == nil {
		return 0, apierror.New(apierror.MissingField, "id is required: an integer identifying the plant")
	}
	if kind := rawKind(raw); kind != "a number" {
		return 0, apierror.New(apierror.WrongType, "id must be an integer, got "+kind)
	}
	if bytes.ContainsAny(raw, ".eE") {
		return 0, apierror.New(apierror.WrongType,
			"id must be an integer literal without fraction or exponent, got "+quoteShort(string(raw)))
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, apierror.New(apierror.OutOfRange,
			"id must be within the int64 range -9223372036854775808 to 9223372036854775807")
	}
	return id, nil
}

// decodeString decodes a string field. A missing or null optional field is
// nil; a required one is an error.
func decodeString(field string, raw json.RawMessage, required bool) (*string, error) {
	if raw == nil || (!required && string(raw) == "null") {
		if required {
			return nil, apierror.New(apierror.MissingField, field+" is required: a non-empty string")
		}
		return nil, nil
	}
	if kind := rawKind(raw); kind != "a string" {
		return nil, apierror.New(apierror.WrongType, field+" must be a string, got "+kind)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		// No escapes: the literal's bytes are the string (valid UTF-8 and
		// free of raw control characters, or the body would have been refused).
		s := string(raw[1 : len(raw)-1])
		return &s, nil
	}
	if hasLoneSurrogate(raw) {
		// encoding/json would silently turn it into U+FFFD; refuse instead.
		return nil, apierror.New(apierror.BadCharacters,
			field+" contains an invalid \\u escape (an unpaired UTF-16 surrogate)")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, malformed(err)
	}
	return &s, nil
}

// rawKind names the JSON type of a single, already validated value.
func rawKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "a delimiter"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}

// hasLoneSurrogate reports whether a JSON string literal holds a \u escape of
// a UTF-16 surrogate that is not part of a high-low pair.
func hasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue // a one-character escape such as \n or \\
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			return false // not an escape the decoder accepts; it reports that itself
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate with no high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, ok := hex4(raw, i+3); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(v), err == nil
}

func malformed(err error) *apierror.Error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return apierror.New(apierror.MalformedJSON, fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apierror.New(apierror.MalformedJSON, "malformed JSON: the body ends before the object is complete")
	default:
		return apierror.New(apierror.MalformedJSON, "malformed JSON: "+err.Error())
	}
}

// quoteShort quotes s for a message, cut to a readable length.
func quoteShort(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return strconv.Quote(s)
}
