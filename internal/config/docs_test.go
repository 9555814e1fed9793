package config

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/docgen"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// TestConfigurationDoc: docs/configuration.md's flag tables are the binary's
// own flag sets, the service's and migrate-store's additions; docs/webhooks.md
// shows the --webhook-* rows of the same table.
func TestConfigurationDoc(t *testing.T) {
	var service, migrate []Flag
	_, _ = parseWith([]string{"--help"}, io.Discard, serviceUsage, func(fs *flag.FlagSet) { service = describe(fs) })
	_, _ = parseMigrate([]string{"--help"}, io.Discard, func(fs *flag.FlagSet) { migrate = describe(fs) })
	if len(service) == 0 || len(migrate) <= len(service) {
		t.Fatalf("%d service flags, %d of migrate-store", len(service), len(migrate))
	}
	known := map[string]bool{}
	for _, f := range service {
		known[f.Name] = true
	}
	var own []Flag
	for _, f := range migrate {
		if !known[f.Name] {
			own = append(own, f)
		}
	}
	docgen.Check(t, "docs/configuration.md", "flags", flagTable(service), *update)
	docgen.Check(t, "docs/configuration.md", "migrate-flags", flagTable(own), *update)
	var webhook []Flag
	for _, f := range service {
		if strings.HasPrefix(f.Name, "webhook-") {
			webhook = append(webhook, f)
		}
	}
	docgen.Check(t, "docs/webhooks.md", "webhook-flags", flagTable(webhook), *update)
}

func flagTable(flags []Flag) string {
	rows := make([][]string, 0, len(flags))
	for _, f := range flags {
		env := docgen.Code(f.Env)
		if f.Env == "command line only" {
			env = "(command line only)"
		}
		def := f.Default
		if def == `""` {
			def = ""
		}
		rows = append(rows, []string{docgen.Code("--" + f.Name), env, docgen.Code(def), docgen.Cell(f.Usage)})
	}
	return docgen.Table([]string{"flag", "environment", "default", "meaning"}, rows)
}
