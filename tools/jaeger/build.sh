#!/usr/bin/env bash
# make jaeger: builds Jaeger v2 with only what stampede uses into OUTPUT.
#
#   bash tools/jaeger/build.sh OUTPUT      (GO=go by default)
#
# The release is the one tools/jaeger/go.mod requires (go.sum checks it).
# Its sources are copied from the module cache into a temporary directory,
# trim (go run ./trim) cuts the storage backends the project does not use
# out of them, and main.go becomes cmd/jaeger/stampede there: a collector
# with the OTLP receiver, the batch processor, the memory storage and the
# query service. The build stops if it would link a package trim cut out.
# The build uses the release's own go.mod and go.sum, so every dependency is
# at the version Jaeger released with; -trimpath keeps the build cache valid
# across the temporary directories, and -s -w (no symbol table, no DWARF)
# shortens the link and the binary; panics still show file and line.
set -euo pipefail

out=${1:?usage: build.sh OUTPUT}
case $out in /*) ;; *) out=$PWD/$out ;; esac
go=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
export GOWORK=off

"$go" -C "$here" mod download github.com/jaegertracing/jaeger
info=$("$go" -C "$here" list -m -f '{{.Version}} {{.Dir}}' github.com/jaegertracing/jaeger)
read -r version mod <<<"$info"
if [ -z "$mod" ] || [ ! -f "$mod/go.mod" ]; then
	echo "build.sh: no sources of github.com/jaegertracing/jaeger in the module cache ($info)" >&2
	exit 1
fi

src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -R "$mod/." "$src"
chmod -R u+w "$src"
# -trimpath here too, so that trim's standard library packages are the
# build's (one compile, not two, on an empty build cache).
"$go" -C "$here" run -trimpath ./trim "$src" >"$src/trimmed"
mkdir "$src/cmd/jaeger/stampede"
cp "$here/main.go" "$src/cmd/jaeger/stampede/main.go"
"$go" -C "$src" list -deps ./cmd/jaeger/stampede/main.go >"$src/deps"
if grep -Fx -f "$src/trimmed" "$src/deps" >&2; then
	echo "build.sh: the build would still link these packages, which trim cut out" >&2
	exit 1
fi

# main.go is named as a file: its build tag keeps it out of tools/jaeger's
# packages, and a file named on the command line is built regardless.
"$go" -C "$src" build -trimpath \
	-ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$version" \
	-o "$out" ./cmd/jaeger/stampede/main.go
