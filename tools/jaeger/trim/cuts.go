package main

// jaeger is the path of the Jaeger module, the prefix of its packages.
const jaeger = "github.com/jaegertracing/jaeger/"

// A cut says what trim removes from one file of the release.
type cut struct {
	file    string   // the file, relative to the module's root
	drop    []string // imports to remove with every field, if and case that uses them
	decls   []string // declarations to remove (types, functions, methods)
	orphans []string // imports that only the removed code used
	keep    []string // the storage imports (jaeger + "internal/storage/...") the file has afterwards
}

// cuts lists what trim removes from Jaeger v1.76.0 (Jaeger 2.13.0).
//
// The jaeger_storage extension imports every storage backend, for its
// configuration (config.go) and to make the configured ones (extension.go);
// it keeps its memory backend. The query service's package (flags.go) imports
// the v1 storage factory, and with it every v1 backend and Kafka, for the
// archive storage of BuildQueryServiceOptions, which only the v1 query binary
// calls.
func cuts() []cut {
	return []cut{{
		file: "cmd/jaeger/internal/extension/jaegerstorage/config.go",
		drop: []string{
			jaeger + "internal/config/promcfg",
			jaeger + "internal/storage/cassandra/config",
			jaeger + "internal/storage/elasticsearch/config",
			jaeger + "internal/storage/metricstore/prometheus",
			jaeger + "internal/storage/v1/badger",
			jaeger + "internal/storage/v1/cassandra",
			jaeger + "internal/storage/v1/elasticsearch",
			jaeger + "internal/storage/v2/clickhouse",
			jaeger + "internal/storage/v2/grpc",
		},
		decls:   []string{"PrometheusConfiguration"},
		orphans: []string{"time"},
		keep:    []string{jaeger + "internal/storage/v1/memory"},
	}, {
		file: "cmd/jaeger/internal/extension/jaegerstorage/extension.go",
		drop: []string{
			jaeger + "internal/storage/elasticsearch/config",
			jaeger + "internal/storage/metricstore/elasticsearch",
			jaeger + "internal/storage/metricstore/prometheus",
			jaeger + "internal/storage/v2/badger",
			jaeger + "internal/storage/v2/cassandra",
			jaeger + "internal/storage/v2/clickhouse",
			jaeger + "internal/storage/v2/elasticsearch",
			jaeger + "internal/storage/v2/grpc",
		},
		decls: []string{"resolveAuthenticator"},
		keep: []string{
			jaeger + "internal/storage/v1",
			jaeger + "internal/storage/v2/api/tracestore",
			jaeger + "internal/storage/v2/memory",
		},
	}, {
		file:  "cmd/query/app/flags.go",
		drop:  []string{jaeger + "internal/storage/v1/factory"},
		decls: []string{"InitArchiveStorageFn", "BuildQueryServiceOptions"},
		orphans: []string{
			jaeger + "cmd/query/app/querysvc",
			jaeger + "cmd/query/app/querysvc/v2/querysvc",
			jaeger + "internal/storage/v2/v1adapter",
		},
	}}
}
