#!/usr/bin/env bash
# make copy-check: copies cachex, lockx (with pgfence) and redistest into a
# fresh module, as a team taking them into its own service would, pins
# go-redis to the lowest version they support, and runs go vet and their
# tests there: private redis-server processes, and the Postgres that
# DATABASE_URL names for pgfence. It fails when a copied file still names
# this repository, when a copied comment cites one of its paths (docs/X.md,
# internal/, cmd/, make bench) without saying it is the stampede
# repository's, when go mod tidy needs a go line above the stated minimum,
# or when the copy requires other modules than docs/cachex.md and
# docs/lockx.md ("Copy it") list.
#
#   bash scripts/copy-check.sh [go test flags...]     (default: -count=1)
#
# GOREDIS (default v9.22.0, the lowest supported) is the go-redis version;
# GOMIN (default the stated minimum, gomin below) the copy's go line;
# MODULE (default example.com/shop) the copy's module path; COPY_DIR (default
# a temporary directory, removed at the end) where the copy is made.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
goredis=${GOREDIS:-v9.22.0}
# The minimum Go and the modules the copy requires directly, as "Copy it" and
# doc.go state them (scripts/copycheck_test.go checks that they do).
gomin=1.26.0
modules='github.com/jackc/pgx/v5 github.com/prometheus/client_golang github.com/redis/go-redis/v9 go.opentelemetry.io/otel go.opentelemetry.io/otel/sdk go.opentelemetry.io/otel/trace'
gomin=${GOMIN:-$gomin}
module=${MODULE:-example.com/shop}
go=${GO:-go}
log() { printf 'copy-check: %s\n' "$*"; }
if [ -n "${COPY_DIR:-}" ]; then
	dir=$COPY_DIR
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'chmod -R u+w "$dir" 2>/dev/null; rm -rf "$dir"' EXIT
fi

# The packages and their tests, under the copy's own paths.
rm -rf "$dir/cachex" "$dir/lockx" "$dir/redistest"
cp -R "$root/internal/cachex" "$dir/cachex"
cp -R "$root/internal/lockx" "$dir/lockx"
cp -R "$root/internal/redistest" "$dir/redistest"
find "$dir" -name '*.go' -exec sed -i "s#github.com/stampede-lab/stampede/internal/#$module/#g" {} +
if named=$(grep -rl 'stampede-lab' "$dir"); then
	log "these copied files still name this repository:"
	printf '  %s\n' $named
	exit 1
fi
# Comments that cite this repository's paths, which do not travel with a
# copy.
if cited=$(cd "$dir" && grep -rnE 'docs/[A-Za-z0-9_-]+\.md|internal/|cmd/|make bench' --include='*.go' cachex lockx redistest |
	grep -vE 'stampede|repository'); then
	log "these copied comments cite paths of this repository; state the fact, or name the stampede repository's page:"
	printf '%s\n' "$cited"
	exit 1
fi

# -trimpath: the copy is made in a new directory each time; without the
# directory in its build cache keys, a second run reuses the first one's builds.
export GOWORK=off GOFLAGS="-mod=mod -trimpath"
cd "$dir"
# Start from this repository's requirements, so that every other dependency
# is at the version tested here and no new one is looked up; tidy then keeps
# only what the copy imports.
cp "$root/go.mod" "$root/go.sum" .
"$go" mod edit -module "$module" -go="$gomin" -toolchain=none
"$go" get "github.com/redis/go-redis/v9@$goredis" >/dev/null 2>&1 || "$go" get "github.com/redis/go-redis/v9@$goredis"
"$go" mod tidy >/dev/null 2>&1 || "$go" mod tidy
# go get may have raised the go line for a module tidy then dropped: lower
# it again; a tidy that raises it now does so for a module the copy uses.
"$go" mod edit -go="$gomin" -toolchain=none
"$go" mod tidy >/dev/null 2>&1 || "$go" mod tidy
got=$("$go" list -m -f '{{.Version}}' github.com/redis/go-redis/v9)
if [ "$got" != "$goredis" ]; then
	log "go mod tidy moved go-redis from $goredis to $got: a dependency needs a newer one"
	exit 1
fi
gover=$("$go" list -m -f '{{.GoVersion}}')
if [ "$gover" != "$gomin" ]; then
	log "go mod tidy raised the go line from $gomin to $gover: a dependency needs a newer Go than the stated minimum"
	exit 1
fi
required=$("$go" list -m -f '{{if not (or .Main .Indirect)}}{{.Path}}{{end}}' all | sort | xargs)
if [ "$required" != "$modules" ]; then
	log "the copy requires: $required"
	log "the stated modules: $modules"
	exit 1
fi
log "module $module in $dir, go $gover, go-redis $got"
log "requires $required"
"$go" vet ./...
if [ $# -eq 0 ]; then set -- -count=1; fi
"$go" test "$@" ./...
