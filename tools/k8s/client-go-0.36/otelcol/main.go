// Command otelcol is an OpenTelemetry Collector with the components a user's
// trace pipeline in front of a trace store needs: the OTLP receiver,
// memory_limiter, batch, k8sattributes and tail_sampling processors, the OTLP
// exporters and the health_check extension for the probes. It is what the
// OpenTelemetry Collector Builder makes of a manifest naming those
// components, all of one collector release (go.mod); the test cluster runs it
// where a user runs otel/opentelemetry-collector-contrib.
package main

import (
	"log"
	"runtime/debug"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"
)

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "OpenTelemetry Collector for plantstore's test cluster",
			Version:     collectorVersion(),
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
				// As the contrib distribution: ${VAR} reads the environment.
				DefaultScheme: "env",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}
}

// collectorVersion is the collector release this binary was built from, as
// go.mod pins it, so that the version it reports cannot drift from it.
func collectorVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == "go.opentelemetry.io/collector/otelcol" {
			return m.Version
		}
	}
	return "unknown"
}
