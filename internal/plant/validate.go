package plant

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Limits of the contract, in Unicode code points.
const (
	MinNameLen = 1
	MaxNameLen = 200
	MaxTagLen  = 100
)

// Problem classifies why a value is invalid; the HTTP layer maps each to a
// stable error code.
type Problem int

const (
	// OutOfRange: a length outside the field's limits.
	OutOfRange Problem = iota + 1
	// BadCharacters: invalid UTF-8 or a control character.
	BadCharacters
)

// ValidationError names the field at fault and says what is wrong with it in
// words a person can act on.
type ValidationError struct {
	Field   string
	Problem Problem
	Message string
}

func (e *ValidationError) Error() string { return e.Message }

// Validate checks the content rules of a plant: the name has 1 to 200 code
// points and the tag at most 100, both valid UTF-8 without control
// characters. Any int64 is a valid id.
func Validate(p Plant) error {
	if err := validateText("name", p.Name, MinNameLen, MaxNameLen); err != nil {
		return err
	}
	if p.Tag != nil {
		if err := validateText("tag", *p.Tag, 0, MaxTagLen); err != nil {
			return err
		}
	}
	return nil
}

func validateText(field, s string, minLen, maxLen int) error {
	if !utf8.ValidString(s) {
		return &ValidationError{Field: field, Problem: BadCharacters,
			Message: fmt.Sprintf("%s must be valid UTF-8", field)}
	}
	n := 0
	for i, r := range s {
		if unicode.Is(unicode.Cc, r) {
			return &ValidationError{Field: field, Problem: BadCharacters,
				Message: fmt.Sprintf("%s must not contain control characters (found U+%04X at byte %d)", field, r, i)}
		}
		n++
	}
	if n < minLen || n > maxLen {
		return &ValidationError{Field: field, Problem: OutOfRange,
			Message: fmt.Sprintf("%s must be %d to %d characters long, got %d", field, minLen, maxLen, n)}
	}
	return nil
}
