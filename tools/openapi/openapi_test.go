// Package openapi checks api/openapi.yaml and the client generated from it:
// the document passes kin-openapi's validator with every optional check on,
// and api/client/client.gen.go is what the document generates.
package openapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// strict are the validator's options: every example and default checked
// against its schema, patterns compiled, a format the OpenAPI specification
// does not define an error rather than ignored, and nothing but extensions
// beside a $ref.
var strict = []openapi3.ValidationOption{
	openapi3.EnableExamplesValidation(),
	openapi3.EnableSchemaDefaultsValidation(),
	openapi3.EnableSchemaPatternValidation(),
	openapi3.EnableSchemaFormatValidation(),
	openapi3.ProhibitExtensionsWithRef(),
}

// validate loads an OpenAPI document and validates it with the strict options.
func validate(t *testing.T, doc []byte) error {
	t.Helper()
	loader := openapi3.NewLoader()
	spec, err := loader.LoadFromData(doc)
	if err != nil {
		return err
	}
	return spec.Validate(t.Context(), strict...)
}

func readDocument(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

func TestDocumentIsValid(t *testing.T) {
	if err := validate(t, []byte(readDocument(t))); err != nil {
		t.Fatalf("api/openapi.yaml does not pass the strict validator:\n%v", err)
	}
}

// TestValidatorIsStrict breaks the document in the ways the strict options
// exist to catch, and checks that each is refused: a validator that passes
// everything would pass TestDocumentIsValid too.
func TestValidatorIsStrict(t *testing.T) {
	cases := []struct{ name, old, new, complaint string }{
		{"a parameter default outside its schema", "            default: 20\n", "            default: 500\n", "default"},
		{"a format the specification does not define", "            format: int32\n", "            format: int33\n", "format"},
		{"a schema example of the wrong type", "          example: 40002\n", "          example: forty\n", "example"},
		{"a response example missing a required field",
			"            error: 40402\n            message: 'no plant has id 10'\n", "            error: 40402\n", "message"},
		{"a request example with a field of the wrong type",
			"                value:\n                  id: 10\n", "                value:\n                  id: ten\n", "example"},
		{"a sibling of a $ref", "        '400':\n          $ref: '#/components/responses/BadListQuery'\n",
			"        '400':\n          description: x\n          $ref: '#/components/responses/BadListQuery'\n", "description"},
		{"a reference to nothing", "$ref: '#/components/responses/PlantNotFound'", "$ref: '#/components/responses/PlantNotFond'", "PlantNotFond"},
	}
	doc := readDocument(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(doc, tc.old) {
				t.Fatalf("the document no longer contains %q: update the case", tc.old)
			}
			err := validate(t, []byte(strings.Replace(doc, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatal("the validator accepted it")
			}
			if !strings.Contains(err.Error(), tc.complaint) {
				t.Fatalf("error %q does not mention %q", err, tc.complaint)
			}
		})
	}
}
