// The Jaeger release make jaeger builds (tools/jaeger/build.sh), in a module
// of its own so that the main go.mod stays lean. The build uses the
// release's own go.mod and go.sum for its dependencies; this file and go.sum
// pin the release and its checksum. No package here imports it, so go mod
// tidy would drop the requirement: change the version with go get.
module github.com/stampede-lab/stampede/tools/jaeger

go 1.26.8

require github.com/jaegertracing/jaeger v1.76.0
