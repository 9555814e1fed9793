// Package apierrortest decodes the contract's Error body strictly, for tests
// of every package that answers with it.
package apierrortest

import (
	"encoding/json"
	"testing"
)

// Decode returns the code and message of an Error body, failing the test
// unless the body is a JSON object with exactly the fields error (an int32)
// and message (a string).
func Decode(t testing.TB, body []byte) (int32, string) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", body, err)
	}
	if len(fields) != 2 || fields["error"] == nil || fields["message"] == nil {
		t.Fatalf("body %q must have exactly the fields error and message", body)
	}
	var code int32
	if err := json.Unmarshal(fields["error"], &code); err != nil {
		t.Fatalf("error %s is not an int32: %v", fields["error"], err)
	}
	var msg string
	if err := json.Unmarshal(fields["message"], &msg); err != nil {
		t.Fatalf("message %s is not a string: %v", fields["message"], err)
	}
	return code, msg
}
