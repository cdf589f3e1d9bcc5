//go:build ignore

// Command jaeger is Jaeger v2 with only the components stampede configures
// (deploy/jaeger/local.yaml): the OTLP receiver, the batch processor, the
// jaeger_storage extension (memory backend), the jaeger_storage_exporter and
// the jaeger_query extension. build.sh compiles it inside a copy of the
// Jaeger module, as cmd/jaeger/stampede: only there may it import Jaeger's
// internal packages. The build tag keeps it out of this module's packages.
package main

import (
	"fmt"
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
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
	"github.com/jaegertracing/jaeger/internal/version"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "jaeger:", err)
		os.Exit(1)
	}
}

// run runs the collector command line (--config, --set, validate,
// components) with args.
func run(args []string) error {
	cmd := otelcol.NewCommand(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "jaeger",
			Description: "Jaeger v2, memory storage only (stampede's make jaeger)",
			Version:     version.Get().GitVersion,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// yaml: serves --set.
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(), fileprovider.NewFactory(), yamlprovider.NewFactory(),
				},
			},
		},
	})
	cmd.SetArgs(args)
	return cmd.Execute()
}

// components returns the factories of the components this build links.
func components() (otelcol.Factories, error) {
	extensions, err := otelcol.MakeFactoryMap[extension.Factory](jaegerstorage.NewFactory(), jaegerquery.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	processors, err := otelcol.MakeFactoryMap[processor.Factory](batchprocessor.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](storageexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{
		Extensions: extensions,
		Receivers:  receivers,
		Processors: processors,
		Exporters:  exporters,
		Telemetry:  otelconftelemetry.NewFactory(),
	}, nil
}
