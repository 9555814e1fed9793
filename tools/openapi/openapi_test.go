// Package openapi checks api/openapi.yaml and what is made from it: the
// document, its webhooks included, passes kin-openapi's validator with every
// optional check on; api/client/client.gen.go is what the document
// generates; the webhooks the service sends are what the document declares;
// the service's reference page (GET /docs) shows all of it in a real browser
// and sends requests from its form; and the tables of docs/api.md are the
// document's.
package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// webhooksKey is where the document declares its webhooks: OpenAPI 3.1's
// webhooks under an extension's name, since the document is 3.0.3.
const webhooksKey = "x-webhooks"

// webhookPath is where loadDocument puts the webhook name among the paths.
func webhookPath(name string) string { return "/" + webhooksKey + "/" + name }

// loadDocument loads an OpenAPI document with kin-openapi and moves each of
// its x-webhooks under paths, at webhookPath(name). kin-openapi keeps an
// extension as opaque data, neither resolving its references nor validating
// it; as a path item a webhook is checked like any operation, and
// openapi3filter can validate a request against it.
func loadDocument(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, err
	}
	raw, ok := doc.Extensions[webhooksKey]
	if !ok {
		return nil, fmt.Errorf("the document has no %s", webhooksKey)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var webhooks map[string]*openapi3.PathItem
	if err := json.Unmarshal(b, &webhooks); err != nil {
		return nil, fmt.Errorf("%s: %w", webhooksKey, err)
	}
	for _, name := range slices.Sorted(maps.Keys(webhooks)) {
		if doc.Paths.Value(webhookPath(name)) != nil {
			return nil, fmt.Errorf("the path %s exists already", webhookPath(name))
		}
		doc.Paths.Set(webhookPath(name), webhooks[name])
	}
	if err := loader.ResolveRefsIn(doc, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", webhooksKey, err)
	}
	return doc, nil
}

// validate loads an OpenAPI document and validates it with the strict options.
func validate(t *testing.T, data []byte) error {
	t.Helper()
	doc, err := loadDocument(data)
	if err != nil {
		return err
	}
	return doc.Validate(t.Context(), strict...)
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
		// The webhooks are checked too, not carried as an opaque extension.
		{"a webhook's reference to nothing", "- $ref: '#/components/parameters/WebhookId'\n", "- $ref: '#/components/parameters/WebhookID'\n", "WebhookID"},
		{"a webhook example with the other event's type",
			"              type: plant.deleted\n", "              type: plant.created\n", "example"},
		{"a webhook example whose timestamp is not a date-time",
			"              timestamp: '2026-01-02T03:09:41.5Z'\n", "              timestamp: 'yesterday'\n", "date-time"},
		{"a webhook header example outside its pattern",
			"      example: msg_0f3c2b4a5d6e7f8091a2b3c4d5e6f708\n", "      example: 0f3c2b4a5d6e7f8091a2b3c4d5e6f708\n", "pattern"},
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
