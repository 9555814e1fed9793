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
func DecodeNewPlant(body []byte) (plant.Plant, *apierror.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON,
			`request body is empty: send a JSON object such as {"id": 1, "name": "Monstera"}`)
	}
	if !utf8.Valid(body) {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON, "request body is not valid UTF-8")
	}

	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return plant.Plant{}, malformed(err)
	}
	if tok != json.Delim('{') {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON,
			"request body must be a JSON object, got "+tokenKind(tok))
	}

	var idRaw, nameRaw, tagRaw json.RawMessage
	// A map, not a slice: a 64 KiB body can hold thousands of keys, and a
	// quadratic scan of them costs a client's request a lot of server CPU.
	seen := make(map[string]struct{})
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return plant.Plant{}, malformed(err)
		}
		key, _ := tok.(string) // the decoder guarantees a string in key position
		if _, dup := seen[key]; dup {
			return plant.Plant{}, apierror.New(apierror.DuplicateKey,
				"duplicate key "+quoteShort(key)+" in the object: each key may appear once")
		}
		seen[key] = struct{}{}
		for _, f := range fields {
			if key != f && strings.EqualFold(key, f) {
				return plant.Plant{}, apierror.New(apierror.CaseVariantKey,
					"key "+quoteShort(key)+" is a case variant of the field \""+f+"\": field names are case-sensitive, send \""+f+"\"")
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return plant.Plant{}, malformed(err)
		}
		switch key {
		case "id":
			idRaw = raw
		case "name":
			nameRaw = raw
		case "tag":
			tagRaw = raw
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return plant.Plant{}, malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return plant.Plant{}, apierror.New(apierror.MalformedJSON,
			"unexpected content after the JSON object: send exactly one object")
	}

	var p plant.Plant
	if p.ID, err = decodeID(idRaw); err != nil {
		return plant.Plant{}, asAPIError(err)
	}
	name, err := decodeString("name", nameRaw, true)
	if err != nil {
		return plant.Plant{}, asAPIError(err)
	}
	p.Name = *name
	if p.Tag, err = decodeString("tag", tagRaw, false); err != nil {
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
