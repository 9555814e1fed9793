package httpapi

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

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
	f, e := readFields(body)
	if e != nil {
		return plant.Plant{}, e
	}
	return buildPlant(f)
}

// decoderOptions: the body is valid UTF-8 already, and a lone surrogate
// escape is refused only in the fields the plant keeps (decodeString), so
// that an ignored field cannot make a body invalid. Duplicate names matter
// only at the top level, where readFields finds them.
var decoderOptions = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// rawFields are the JSON values of the fields a NewPlant has; nil when absent.
type rawFields struct {
	id, name, tag []byte
}

// bodyDecoder is a pooled jsontext decoder and the buffer it reads from; a
// bytes.Buffer lets jsontext parse the body in place, without a copy.
type bodyDecoder struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

var bodyDecoders = sync.Pool{New: func() any { return new(bodyDecoder) }}

// readFields reads the body's top-level object token by token, reporting the
// first problem in the order a reader meets it. The fields it returns are
// slices of body (found from the decoder's input offset), so they stay valid
// after the decoder moves on.
func readFields(body []byte) (rawFields, *apierror.Error) {
	var f rawFields
	bd := bodyDecoders.Get().(*bodyDecoder)
	defer bodyDecoders.Put(bd)
	bd.buf = *bytes.NewBuffer(body)
	dec := &bd.dec
	dec.Reset(&bd.buf, decoderOptions...)
	// value returns the bytes of the value or name just read, in body.
	value := func(n int) []byte {
		end := int(dec.InputOffset())
		return body[end-n : end : end]
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return f, malformed(err)
	}
	if tok.Kind() != '{' {
		return f, apierror.New(apierror.MalformedJSON, "request body must be a JSON object, got "+kindName(tok.Kind()))
	}
	// Objects are small: compare the first keys directly, and only build a
	// map for bodies with many (a 64 KiB body can hold thousands, and a
	// quadratic scan of them would cost a lot of CPU).
	var first [8]string
	var seen map[string]struct{}
	for n := 0; dec.PeekKind() == '"'; n++ {
		name, err := dec.ReadValue()
		if err != nil {
			return f, malformed(err)
		}
		key := string(value(len(name))[1 : len(name)-1])
		if strings.IndexByte(key, '\\') >= 0 {
			unquoted, _ := jsontext.AppendUnquote(nil, name) // a lone surrogate becomes U+FFFD
			key = string(unquoted)
		}
		if n < len(first) {
			if slices.Contains(first[:n], key) {
				return f, duplicateKey(key)
			}
			first[n] = key
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(first))
				for _, k := range first {
					seen[k] = struct{}{}
				}
			}
			if _, dup := seen[key]; dup {
				return f, duplicateKey(key)
			}
			seen[key] = struct{}{}
		}
		if e := keyProblem(key); e != nil {
			return f, e
		}
		raw, err := dec.ReadValue()
		if err != nil {
			return f, malformed(err)
		}
		switch key {
		case "id":
			f.id = value(len(raw))
		case "name":
			f.name = value(len(raw))
		case "tag":
			f.tag = value(len(raw))
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return f, malformed(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return f, apierror.New(apierror.MalformedJSON,
			"unexpected content after the JSON object: send exactly one object")
	}
	return f, nil
}

func duplicateKey(key string) *apierror.Error {
	return apierror.New(apierror.DuplicateKey,
		"duplicate key "+quoteShort(key)+" in the object: each key may appear once")
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

// buildPlant checks the fields' types and values and makes the plant.
func buildPlant(f rawFields) (plant.Plant, *apierror.Error) {
	var p plant.Plant
	var e *apierror.Error
	if p.ID, e = decodeID(f.id); e != nil {
		return plant.Plant{}, e
	}
	name, e := decodeString("name", f.name, true)
	if e != nil {
		return plant.Plant{}, e
	}
	p.Name = *name
	if p.Tag, e = decodeString("tag", f.tag, false); e != nil {
		return plant.Plant{}, e
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

func decodeID(raw jsontext.Value) (int64, *apierror.Error) {
	if raw == nil {
		return 0, apierror.New(apierror.MissingField, "id is required: an integer identifying the plant")
	}
	if kind := raw.Kind(); kind != '0' {
		return 0, apierror.New(apierror.WrongType, "id must be an integer, got "+kindName(kind))
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
func decodeString(field string, raw jsontext.Value, required bool) (*string, *apierror.Error) {
	if raw == nil || (!required && raw.Kind() == 'n') {
		if required {
			return nil, apierror.New(apierror.MissingField, field+" is required: a non-empty string")
		}
		return nil, nil
	}
	if kind := raw.Kind(); kind != '"' {
		return nil, apierror.New(apierror.WrongType, field+" must be a string, got "+kindName(kind))
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		// No escapes: the literal's bytes are the string (valid UTF-8 and
		// free of raw control characters, or the body would have been refused).
		s := string(raw[1 : len(raw)-1])
		return &s, nil
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		// A lone UTF-16 surrogate escape, which a lenient parser would turn
		// into U+FFFD: refused rather than changed.
		return nil, apierror.New(apierror.BadCharacters,
			field+" contains an invalid \\u escape (an unpaired UTF-16 surrogate)")
	}
	str := string(s)
	return &str, nil
}

// kindName names a JSON kind for a message.
func kindName(k jsontext.Kind) string {
	switch k {
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

func malformed(err error) *apierror.Error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apierror.New(apierror.MalformedJSON, "malformed JSON: the body ends before the object is complete")
	case errors.As(err, &se):
		return apierror.New(apierror.MalformedJSON,
			"malformed JSON at byte "+strconv.FormatInt(se.ByteOffset, 10)+": "+se.Err.Error())
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
