#!/usr/bin/env bash
# Builds the CNCF distribution registry (its Go module, pinned in go.mod) into .local/bin/registry: the OCI
# registry of the test environment (tests/support/src/registry.rs), which `make cluster` and the test binaries
# start with TLS and htpasswd authentication. Does nothing when it was already built from the same files with the
# same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
go_tools_up_to_date registry registry go.mod go.sum tools.go build.sh && exit 0
distribution=github.com/distribution/distribution/v3
version=$(go list -m -f '{{.Version}}' "$distribution")
go_tools_build_start registry "building the distribution registry $version from tests/registry/go.mod"
# `registry --version` reports the variable the release builds set; without it, "<version>+unknown".
go build -trimpath -ldflags="-s -w -X $distribution/version.version=$version" \
  -o "$GO_TOOLS_OUT/registry" "$distribution/cmd/registry"
go_tools_built registry
