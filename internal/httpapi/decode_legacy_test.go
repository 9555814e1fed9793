// The decoder the service used before it read bodies with jsontext, kept
// beside the new one so that FuzzDecoderAgreesWithLegacy can compare them.
// It goes once the fuzz run has found no difference.
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

// legacyFields are the keys of a NewPlant.
var legacyFields = [...]string{"id", "name", "tag"}

// legacyDecodeNewPlant parses a NewPlant request body and validates it. It reads the
// body strictly, so that no other JSON parser could read the same bytes as a
// different plant: one object and nothing after it, valid UTF-8, no duplicate
// keys, no case variant of id, name or tag (encoding/json and other parsers
// match keys case-insensitively and would read "Name" as the name), id an
// integer literal within int64. Unknown legacyFields are ignored.
//
// A body that encoding/json finds valid is split into legacyFields by a scanner
// that allocates next to nothing; any other body goes through a slower walk
// with encoding/json's tokenizer, whose only job is to say precisely what is
// wrong. A fuzz test checks that both read every valid body alike.
func legacyDecodeNewPlant(body []byte) (plant.Plant, *apierror.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON,
			`request body is empty: send a JSON object such as {"id": 1, "name": "Monstera"}`)
	}
	if !utf8.Valid(body) {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON, "request body is not valid UTF-8")
	}
	var f legacyRawFields
	var e *apierror.Error
	if json.Valid(body) {
		f, e = legacyScanFields(body)
	} else {
		f, e = legacyWalkFields(body)
		if e == nil { // cannot happen: the walk refuses what json.Valid refuses
			e = apierror.New(apierror.MalformedJSON, "malformed JSON")
		}
	}
	if e != nil {
		return plant.Plant{}, e
	}
	return legacyBuildPlant(f)
}

// legacyRawFields are the JSON values of the legacyFields a NewPlant has; nil when absent.
type legacyRawFields struct {
	id, name, tag []byte
}

func (f *legacyRawFields) set(key string, raw []byte) {
	switch key {
	case "id":
		f.id = raw
	case "name":
		f.name = raw
	case "tag":
		f.tag = raw
	}
}

// legacyKeyProblem refuses a case variant of a field name.
func legacyKeyProblem(key string) *apierror.Error {
	for _, f := range legacyFields {
		if key != f && strings.EqualFold(key, f) {
			return apierror.New(apierror.CaseVariantKey,
				"key "+legacyQuoteShort(key)+" is a case variant of the field \""+f+"\": field names are case-sensitive, send \""+f+"\"")
		}
	}
	return nil
}

func legacyDuplicateKey(key string) *apierror.Error {
	return apierror.New(apierror.DuplicateKey,
		"duplicate key "+legacyQuoteShort(key)+" in the object: each key may appear once")
}

// legacyScanFields splits a body that json.Valid accepted into its top-level
// legacyFields. Syntax errors cannot occur, so the scan only finds where each key
// and value ends.
func legacyScanFields(body []byte) (legacyRawFields, *apierror.Error) {
	var f legacyRawFields
	i := legacySkipSpace(body, 0)
	if body[i] != '{' {
		return f, apierror.New(apierror.MalformedJSON, "request body must be a JSON object, got "+legacyRawKind(body[i:]))
	}
	// Objects are small: compare the first keys directly, and only build a
	// map for bodies with many (a 64 KiB body can hold thousands, and a
	// quadratic scan of them would cost a lot of CPU).
	var first [8][]byte
	var seen map[string]struct{}
	n := 0
	i = legacySkipSpace(body, i+1)
	for body[i] != '}' {
		keyEnd := legacyStringEnd(body, i)
		key := body[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			_ = json.Unmarshal(body[i:keyEnd], &k) // valid: json.Valid said so
			key = []byte(k)
		}
		if n < len(first) {
			for _, k := range first[:n] {
				if bytes.Equal(k, key) {
					return f, legacyDuplicateKey(string(key))
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
				return f, legacyDuplicateKey(string(key))
			}
			seen[string(key)] = struct{}{}
		}
		n++
		if len(key) <= len("name") { // only short keys can be a field or a variant
			if e := legacyKeyProblem(string(key)); e != nil {
				return f, e
			}
		}
		i = legacySkipSpace(body, keyEnd) + 1 // past the colon
		i = legacySkipSpace(body, i)
		legacyValueEnd := legacyValueEnd(body, i)
		if len(key) <= len("name") {
			f.set(string(key), body[i:legacyValueEnd])
		}
		i = legacySkipSpace(body, legacyValueEnd)
		if body[i] == ',' {
			i = legacySkipSpace(body, i+1)
		}
	}
	return f, nil
}

func legacySkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// legacyStringEnd returns the index just past the string literal starting at i.
func legacyStringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// legacyValueEnd returns the index just past the value starting at i.
func legacyValueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return legacyStringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; ; {
			switch b[j] {
			case '"':
				j = legacyStringEnd(b, j)
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

// legacyWalkFields reads the body with encoding/json's tokenizer, reporting the
// first problem in the order a reader meets it. It serves bodies json.Valid
// refused, to say what is wrong with them.
func legacyWalkFields(body []byte) (legacyRawFields, *apierror.Error) {
	var f legacyRawFields
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return f, legacyMalformed(err)
	}
	if tok != json.Delim('{') {
		return f, apierror.New(apierror.MalformedJSON,
			"request body must be a JSON object, got "+legacyTokenKind(tok))
	}
	seen := make(map[string]struct{})
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return f, legacyMalformed(err)
		}
		key, _ := tok.(string) // the decoder guarantees a string in key position
		if _, dup := seen[key]; dup {
			return f, legacyDuplicateKey(key)
		}
		seen[key] = struct{}{}
		if e := legacyKeyProblem(key); e != nil {
			return f, e
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return f, legacyMalformed(err)
		}
		f.set(key, raw)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return f, legacyMalformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return f, apierror.New(apierror.MalformedJSON,
			"unexpected content after the JSON object: send exactly one object")
	}
	return f, nil
}

// legacyBuildPlant checks the legacyFields' types and values and makes the plant.
func legacyBuildPlant(f legacyRawFields) (plant.Plant, *apierror.Error) {
	var p plant.Plant
	var err error
	if p.ID, err = legacyDecodeID(f.id); err != nil {
		return plant.Plant{}, legacyAsAPIError(err)
	}
	name, err := legacyDecodeString("name", f.name, true)
	if err != nil {
		return plant.Plant{}, legacyAsAPIError(err)
	}
	p.Name = *name
	if p.Tag, err = legacyDecodeString("tag", f.tag, false); err != nil {
		return plant.Plant{}, legacyAsAPIError(err)
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

func legacyAsAPIError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierror.New(apierror.MalformedJSON, err.Error())
}

func legacyDecodeID(raw json.RawMessage) (int64, error) {
	if raw == nil {
		return 0, apierror.New(apierror.MissingField, "id is required: an integer identifying the plant")
	}
	if kind := legacyRawKind(raw); kind != "a number" {
		return 0, apierror.New(apierror.WrongType, "id must be an integer, got "+kind)
	}
	if bytes.ContainsAny(raw, ".eE") {
		return 0, apierror.New(apierror.WrongType,
			"id must be an integer literal without fraction or exponent, got "+legacyQuoteShort(string(raw)))
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, apierror.New(apierror.OutOfRange,
			"id must be within the int64 range -9223372036854775808 to 9223372036854775807")
	}
	return id, nil
}

// legacyDecodeString decodes a string field. A missing or null optional field is
// nil; a required one is an error.
func legacyDecodeString(field string, raw json.RawMessage, required bool) (*string, error) {
	if raw == nil || (!required && string(raw) == "null") {
		if required {
			return nil, apierror.New(apierror.MissingField, field+" is required: a non-empty string")
		}
		return nil, nil
	}
	if kind := legacyRawKind(raw); kind != "a string" {
		return nil, apierror.New(apierror.WrongType, field+" must be a string, got "+kind)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		// No escapes: the literal's bytes are the string (valid UTF-8 and
		// free of raw control characters, or the body would have been refused).
		s := string(raw[1 : len(raw)-1])
		return &s, nil
	}
	if legacyHasLoneSurrogate(raw) {
		// encoding/json would silently turn it into U+FFFD; refuse instead.
		return nil, apierror.New(apierror.BadCharacters,
			field+" contains an invalid \\u escape (an unpaired UTF-16 surrogate)")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, legacyMalformed(err)
	}
	return &s, nil
}

// legacyRawKind names the JSON type of a single, already validated value.
func legacyRawKind(raw json.RawMessage) string {
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

func legacyTokenKind(tok json.Token) string {
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

// legacyHasLoneSurrogate reports whether a JSON string literal holds a \u escape of
// a UTF-16 surrogate that is not part of a high-low pair.
func legacyHasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue // a one-character escape such as \n or \\
		}
		r, ok := legacyHex4(raw, i+1)
		if !ok {
			return false // not an escape the decoder accepts; it reports that itself
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate with no high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, ok := legacyHex4(raw, i+3); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

func legacyHex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(v), err == nil
}

func legacyMalformed(err error) *apierror.Error {
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

// legacyQuoteShort quotes s for a message, cut to a readable length.
func legacyQuoteShort(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max]) + "…"
	}
	return strconv.Quote(s)
}
