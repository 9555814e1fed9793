package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestExistingSecrets(t *testing.T) {
	chart := writeFile(t, "values.yaml", `
tokens: {existingSecret: "", existingSecretKey: tokens}
webhooks: {existingSecret: "from-the-chart", existingSecretKey: subscribers}
externalRedis:
  existingSecret: ""
  existingSecretPasswordKey: redis-password
  tls: {caSecret: {existingSecret: "", key: ca.crt}}
`)
	set := writeFile(t, "set.yaml", `
tokens: {existingSecret: my-tokens}
webhooks: {existingSecret: null}
externalRedis:
  existingSecret: redis-auth
  tls: {caSecret: {existingSecret: {name: redis-ca, key: ca.pem}}}
`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		// Key names from the chart's defaults; null in the set removes a default.
		{"set over the chart's values", []string{chart, set}, "my-tokens\ttokens\nredis-auth\tredis-password\nredis-ca\tca.pem\n"},
		{"the set alone", []string{set}, "my-tokens\t\nredis-auth\t\nredis-ca\tca.pem\n"},
		{"the chart's values alone", []string{chart}, "from-the-chart\tsubscribers\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(tt.args, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("printed:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
}

func TestExistingSecretsErrors(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "tokens: [\n")
	for name, args := range map[string][]string{
		"no file":      nil,
		"three files":  {bad, bad, bad},
		"missing file": {filepath.Join(t.TempDir(), "none.yaml")},
		"invalid YAML": {bad},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
