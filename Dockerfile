# The image of the compose demo: the api and loadgen binaries on an empty
# base. Build: docker compose build (or docker build -t stampede:local .).

# --- build ------------------------------------------------------------------
# Pinned to go.mod's go line (deploy/images_test.go): a floating golang:1.26
# cached from before that patch release would refuse go.mod.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules first, in their own layer: it is rebuilt only when go.mod/go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static binaries (no cgo: the final image has no libc), without paths or
# symbol tables. The build cache mount makes rebuilds incremental.
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/api ./cmd/loadgen \
    && mkdir -p /out/data

# --- run --------------------------------------------------------------------
# No CA certificates, shell or libc: all traffic is plain HTTP, Redis and
# Postgres inside the compose network.
FROM scratch
COPY --from=build /out/api /out/loadgen /usr/local/bin/
# A writable working directory for the non-root user (loadgen reports).
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
