#!/usr/bin/env bash
# Builds cosign (its Go module, pinned in go.mod) into .local/bin for the interoperability tests of plugin
# signatures (host/src/reconcileplugin/signature.rs: what `kuberay-wasm plugin push --sign-key` writes must
# verify with `cosign verify --key`, and what `cosign sign --key` writes with the operator), and does nothing
# when it was already built from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
go_tools_up_to_date cosign cosign go.mod go.sum tools.go build.sh && exit 0
cosign=github.com/sigstore/cosign/v3
version=$(go list -m -f '{{.Version}}' "$cosign")
go_tools_build_start cosign "building cosign $version from tests/cosign/go.mod"
# `cosign version` reads its version from a variable the release builds set; without it it prints devel.
go build -trimpath -ldflags="-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version" \
  -o "$GO_TOOLS_OUT/cosign" "$cosign/cmd/cosign"
go_tools_built cosign
