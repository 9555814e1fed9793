// Package internal replaces the collector components' registry of Jaeger's
// cmd/jaeger (cmd/jaeger/internal/components.go) in the test cluster's
// Jaeger build (tools/k8s/build.sh): Jaeger's own registers the Kafka,
// Zipkin and Jaeger receivers, the Kafka and Prometheus exporters, the
// cloud auth extensions and more, whose libraries are a quarter of the
// source its build compiles. This one has what tools/k8s/jaeger/config.yaml
// runs: the OTLP receiver, the batch processor, the storage exporter, the
// storage, query and health check extensions. A configuration naming
// another component fails at start-up, as Jaeger fails for an unknown one.
package internal

import (
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckv2extension"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/exporters/storageexporter"
	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/extension/jaegerquery"
	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/extension/jaegerstorage"
)

// Components has the signature of Jaeger's and the factories config.yaml uses.
func Components() (otelcol.Factories, error) {
	var err error
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	if f.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](
		healthcheckv2extension.NewFactory(), jaegerquery.NewFactory(), jaegerstorage.NewFactory(),
	); err != nil {
		return otelcol.Factories{}, err
	}
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](storageexporter.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if f.Connectors, err = otelcol.MakeFactoryMap[connector.Factory](); err != nil {
		return otelcol.Factories{}, err
	}
	return f, nil
}
