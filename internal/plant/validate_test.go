package plant_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/plant"
)

func ptr(s string) *string { return &s }

func TestValidate(t *testing.T) {
	const emoji = "🌱" // one code point, four bytes
	tests := []struct {
		name    string
		p       plant.Plant
		field   string        // "" means valid
		problem plant.Problem // when invalid
	}{
		// name length, counted in code points
		{name: "name of 1 ASCII character", p: plant.Plant{Name: "a"}},
		{name: "name of 200 ASCII characters", p: plant.Plant{Name: strings.Repeat("a", 200)}},
		{name: "name of 200 two-byte characters", p: plant.Plant{Name: strings.Repeat("é", 200)}},
		{name: "name of 200 three-byte characters", p: plant.Plant{Name: strings.Repeat("植", 200)}},
		{name: "name of 200 emoji", p: plant.Plant{Name: strings.Repeat(emoji, 200)}},
		{name: "name of 1 emoji", p: plant.Plant{Name: emoji}},
		{name: "empty name", p: plant.Plant{Name: ""}, field: "name", problem: plant.OutOfRange},
		{name: "name of 201 ASCII characters", p: plant.Plant{Name: strings.Repeat("a", 201)}, field: "name", problem: plant.OutOfRange},
		{name: "name of 201 emoji", p: plant.Plant{Name: strings.Repeat(emoji, 201)}, field: "name", problem: plant.OutOfRange},
		{name: "name of 201 two-byte characters", p: plant.Plant{Name: strings.Repeat("é", 201)}, field: "name", problem: plant.OutOfRange},
		// a combining sequence is two code points, not one character
		{name: "name of 199 letters and e+combining accent is 201 code points", p: plant.Plant{Name: strings.Repeat("a", 199) + "e\u0301"}, field: "name", problem: plant.OutOfRange},
		{name: "name of 198 letters and e+combining accent is 200 code points", p: plant.Plant{Name: strings.Repeat("a", 198) + "e\u0301"}},
		// tag length
		{name: "nil tag", p: plant.Plant{Name: "a", Tag: nil}},
		{name: "empty tag", p: plant.Plant{Name: "a", Tag: ptr("")}},
		{name: "tag of 1 character", p: plant.Plant{Name: "a", Tag: ptr("t")}},
		{name: "tag of 100 characters", p: plant.Plant{Name: "a", Tag: ptr(strings.Repeat("t", 100))}},
		{name: "tag of 100 emoji", p: plant.Plant{Name: "a", Tag: ptr(strings.Repeat(emoji, 100))}},
		{name: "tag of 101 characters", p: plant.Plant{Name: "a", Tag: ptr(strings.Repeat("t", 101))}, field: "tag", problem: plant.OutOfRange},
		{name: "tag of 101 emoji", p: plant.Plant{Name: "a", Tag: ptr(strings.Repeat(emoji, 101))}, field: "tag", problem: plant.OutOfRange},
		// control characters (category Cc) in the name
		{name: "name with NUL", p: plant.Plant{Name: "a\x00b"}, field: "name", problem: plant.BadCharacters},
		{name: "name of only NUL", p: plant.Plant{Name: "\x00"}, field: "name", problem: plant.BadCharacters},
		{name: "name with U+001F", p: plant.Plant{Name: "a\x1f"}, field: "name", problem: plant.BadCharacters},
		{name: "name with tab", p: plant.Plant{Name: "a\tb"}, field: "name", problem: plant.BadCharacters},
		{name: "name with newline", p: plant.Plant{Name: "a\nb"}, field: "name", problem: plant.BadCharacters},
		{name: "name with carriage return", p: plant.Plant{Name: "a\rb"}, field: "name", problem: plant.BadCharacters},
		{name: "name with DEL U+007F", p: plant.Plant{Name: "a\x7fb"}, field: "name", problem: plant.BadCharacters},
		{name: "name with NEL U+0085", p: plant.Plant{Name: "a\u0085b"}, field: "name", problem: plant.BadCharacters},
		{name: "name with U+0080", p: plant.Plant{Name: "\u0080"}, field: "name", problem: plant.BadCharacters},
		{name: "name with U+009F", p: plant.Plant{Name: "a\u009f"}, field: "name", problem: plant.BadCharacters},
		// control characters in the tag
		{name: "tag with NUL", p: plant.Plant{Name: "a", Tag: ptr("\x00")}, field: "tag", problem: plant.BadCharacters},
		{name: "tag with U+001F", p: plant.Plant{Name: "a", Tag: ptr("x\x1f")}, field: "tag", problem: plant.BadCharacters},
		{name: "tag with DEL", p: plant.Plant{Name: "a", Tag: ptr("\x7f")}, field: "tag", problem: plant.BadCharacters},
		{name: "tag with NEL U+0085", p: plant.Plant{Name: "a", Tag: ptr("\u0085")}, field: "tag", problem: plant.BadCharacters},
		// characters near the control ranges that are not Cc are fine
		{name: "name with space and tilde", p: plant.Plant{Name: " ~"}},
		{name: "name with U+00A0 no-break space", p: plant.Plant{Name: "a\u00a0b"}},
		{name: "name with U+200B zero width space (Cf, not Cc)", p: plant.Plant{Name: "a\u200bb"}},
		{name: "name with U+2028 line separator (Zl, not Cc)", p: plant.Plant{Name: "a\u2028b"}},
		{name: "name with U+FFFD replacement character", p: plant.Plant{Name: "\ufffd"}},
		{name: "name with HTML characters", p: plant.Plant{Name: `<b>Rose & Ivy</b> "x"`}},
		// invalid UTF-8
		{name: "name with 0xFF byte", p: plant.Plant{Name: "a\xffb"}, field: "name", problem: plant.BadCharacters},
		{name: "name with truncated sequence", p: plant.Plant{Name: "a\xc3"}, field: "name", problem: plant.BadCharacters},
		{name: "name with UTF-8 encoded surrogate", p: plant.Plant{Name: "\xed\xa0\x80"}, field: "name", problem: plant.BadCharacters},
		{name: "name with overlong encoding", p: plant.Plant{Name: "\xc0\xaf"}, field: "name", problem: plant.BadCharacters},
		{name: "tag with invalid UTF-8", p: plant.Plant{Name: "a", Tag: ptr("\xfe")}, field: "tag", problem: plant.BadCharacters},
		// which rule wins
		{name: "bad characters win over length", p: plant.Plant{Name: strings.Repeat("\x00", 300)}, field: "name", problem: plant.BadCharacters},
		{name: "invalid UTF-8 wins over length", p: plant.Plant{Name: strings.Repeat("\xff", 300)}, field: "name", problem: plant.BadCharacters},
		{name: "name checked before tag", p: plant.Plant{Name: "", Tag: ptr("\x00")}, field: "name", problem: plant.OutOfRange},
		// any id is valid
		{name: "id min int64", p: plant.Plant{ID: math.MinInt64, Name: "a"}},
		{name: "id max int64", p: plant.Plant{ID: math.MaxInt64, Name: "a"}},
		{name: "id zero", p: plant.Plant{ID: 0, Name: "a"}},
		{name: "id negative", p: plant.Plant{ID: -1, Name: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := plant.Validate(tt.p)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want a %s error on %s", problemName(tt.problem), tt.field)
			}
			var ve *plant.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %T %v, want *plant.ValidationError", err, err)
			}
			if ve.Field != tt.field {
				t.Errorf("Field = %q, want %q", ve.Field, tt.field)
			}
			if ve.Problem != tt.problem {
				t.Errorf("Problem = %s, want %s", problemName(ve.Problem), problemName(tt.problem))
			}
			if !strings.HasPrefix(ve.Message, tt.field+" ") {
				t.Errorf("Message %q does not start with the field name %q", ve.Message, tt.field)
			}
			if err.Error() != ve.Message {
				t.Errorf("Error() = %q, want the Message %q", err.Error(), ve.Message)
			}
		})
	}
}

func problemName(p plant.Problem) string {
	switch p {
	case plant.OutOfRange:
		return "OutOfRange"
	case plant.BadCharacters:
		return "BadCharacters"
	default:
		return fmt.Sprintf("Problem(%d)", int(p))
	}
}

// TestValidateMessages checks that the messages say what is wrong in words a
// person can act on: the limits and the count for a length, the offending
// code point for a control character.
func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name string
		p    plant.Plant
		want []string
	}{
		{"empty name", plant.Plant{Name: ""}, []string{"name", "1 to 200", "got 0"}},
		{"long name counts code points", plant.Plant{Name: strings.Repeat("🌱", 201)}, []string{"name", "1 to 200", "got 201"}},
		{"long tag", plant.Plant{Name: "a", Tag: ptr(strings.Repeat("x", 101))}, []string{"tag", "0 to 100", "got 101"}},
		{"NUL", plant.Plant{Name: "ab\x00"}, []string{"name", "control", "U+0000", "byte 2"}},
		{"NEL", plant.Plant{Name: "\u0085"}, []string{"name", "control", "U+0085"}},
		{"DEL in tag", plant.Plant{Name: "a", Tag: ptr("\x7f")}, []string{"tag", "control", "U+007F"}},
		{"invalid UTF-8", plant.Plant{Name: "\xff"}, []string{"name", "UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := plant.Validate(tt.p)
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}

func TestSameContent(t *testing.T) {
	tests := []struct {
		name string
		a, b plant.Plant
		want bool
	}{
		{"same name, no tags", plant.Plant{Name: "a"}, plant.Plant{Name: "a"}, true},
		{"same name and tag", plant.Plant{Name: "a", Tag: ptr("t")}, plant.Plant{Name: "a", Tag: ptr("t")}, true},
		{"same name, both tags empty", plant.Plant{Name: "a", Tag: ptr("")}, plant.Plant{Name: "a", Tag: ptr("")}, true},
		{"nil tag vs empty tag", plant.Plant{Name: "a"}, plant.Plant{Name: "a", Tag: ptr("")}, false},
		{"empty tag vs nil tag", plant.Plant{Name: "a", Tag: ptr("")}, plant.Plant{Name: "a"}, false},
		{"nil tag vs tag", plant.Plant{Name: "a"}, plant.Plant{Name: "a", Tag: ptr("t")}, false},
		{"different tags", plant.Plant{Name: "a", Tag: ptr("t")}, plant.Plant{Name: "a", Tag: ptr("u")}, false},
		{"tags differing in case", plant.Plant{Name: "a", Tag: ptr("t")}, plant.Plant{Name: "a", Tag: ptr("T")}, false},
		{"different names", plant.Plant{Name: "a"}, plant.Plant{Name: "b"}, false},
		{"names differing in case", plant.Plant{Name: "Rose"}, plant.Plant{Name: "rose"}, false},
		{"names differing in normalization", plant.Plant{Name: "\u00e9"}, plant.Plant{Name: "e\u0301"}, false},
		{"different names, same tag", plant.Plant{Name: "a", Tag: ptr("t")}, plant.Plant{Name: "b", Tag: ptr("t")}, false},
		{"ids are not content", plant.Plant{ID: 1, Name: "a"}, plant.Plant{ID: 2, Name: "a"}, true},
		{"distinct pointers to equal tags", plant.Plant{Name: "a", Tag: ptr("same")}, plant.Plant{Name: "a", Tag: ptr("same")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.SameContent(tt.b); got != tt.want {
				t.Errorf("a.SameContent(b) = %v, want %v", got, tt.want)
			}
			if got := tt.b.SameContent(tt.a); got != tt.want {
				t.Errorf("b.SameContent(a) = %v, want %v (not symmetric)", got, tt.want)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		o    plant.Outcome
		want string
	}{
		{plant.Created, "created"},
		{plant.Replayed, "replayed"},
		{plant.Outcome(0), "unknown"},
		{plant.Outcome(-1), "unknown"},
		{plant.Replayed + 1, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(tt.o), got, tt.want)
		}
	}
	if plant.Created == 0 || plant.Replayed == 0 || plant.Created == plant.Replayed {
		t.Errorf("the zero Outcome must mean neither Created (%d) nor Replayed (%d)", plant.Created, plant.Replayed)
	}
}

func TestErrorsMatchWhenWrapped(t *testing.T) {
	conflict := fmt.Errorf("redis: %w", plant.ErrConflict)
	unavailable := fmt.Errorf("dial tcp: %w", plant.ErrUnavailable)
	if !errors.Is(conflict, plant.ErrConflict) || errors.Is(conflict, plant.ErrUnavailable) {
		t.Errorf("wrapped ErrConflict does not match exactly ErrConflict")
	}
	if !errors.Is(unavailable, plant.ErrUnavailable) || errors.Is(unavailable, plant.ErrConflict) {
		t.Errorf("wrapped ErrUnavailable does not match exactly ErrUnavailable")
	}
}
