#!/usr/bin/env bash
# Builds the spec-hash oracle (kuberay-hash, against KubeRay's own Go module pinned in go.mod) into
# .local/bin/, and does nothing when it was already built from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
go_tools_up_to_date kuberay-hash kuberay-hash go.mod go.sum ./*.go build.sh && exit 0
go_tools_build_start kuberay-hash "building the spec-hash oracle from tests/kuberay-hash/go.mod"
go build -trimpath -ldflags="-s -w" -o "$GO_TOOLS_OUT/kuberay-hash" .
go_tools_built kuberay-hash
