#!/usr/bin/env bash
# Builds a schema registry server for tests (github.com/conduitio/conduit-schema-registry,
# a Go server of the Confluent schema registry API, Apache-2.0) into
# ~/.cache/conveyor/schema-registry-<version>/ and prints the binary's path. Does nothing
# when it is there (the first build takes about a minute). The registry
# runs as a process of its own because its package pulls golangci-lint's module tree
# (a build-tagged tools.go) that cannot be tidied together with the main module's.
# The binary serves the registry in memory: schema-registry --addr 127.0.0.1:PORT.
set -euo pipefail

VERSION="${SCHEMA_REGISTRY_VERSION:-0.2.0}"
CACHE_ROOT="${CONVEYOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conveyor}"
OUT="$CACHE_ROOT/schema-registry-$VERSION"
bin=${CONVEYOR_SCHEMA_REGISTRY:-$OUT/schema-registry}

if [[ ! -x $bin ]]; then
  echo "schema-registry.sh: building conduit-schema-registry v$VERSION" >&2
  src="$OUT/src"
  rm -rf "$src" && mkdir -p "$src"
  cat >"$src/go.mod" <<GOMOD
module conveyor.local/schemaregistry

go 1.26
GOMOD
  cat >"$src/main.go" <<'GO'
// Command schema-registry serves github.com/conduitio/conduit-schema-registry
// in memory on --addr.
package main

import (
	"flag"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	schemaregistry "github.com/conduitio/conduit-schema-registry"
	"github.com/conduitio/conduit-commons/database/inmemory"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	flag.Parse()
	reg, err := schemaregistry.NewSchemaRegistry(&inmemory.DB{})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	schemaregistry.NewServer(slog.New(slog.NewTextHandler(os.Stderr, nil)), reg).RegisterHandlers(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
GO
  # The checksum database does not list this module: fetch it by the proxy's word.
  (cd "$src" && export GONOSUMDB=github.com/conduitio GOFLAGS=-mod=mod CGO_ENABLED=0 &&
    go get "github.com/conduitio/conduit-schema-registry@v$VERSION" github.com/conduitio/conduit-commons@v0.4.0 &&
    go build -trimpath -ldflags="-s -w" -o "$OUT/schema-registry.tmp" .)
  mv "$OUT/schema-registry.tmp" "$OUT/schema-registry"
  bin=$OUT/schema-registry
fi
echo "$bin"
