#!/usr/bin/env bash
# Builds KubeRay's operator (the main package of its Go module, pinned in go.mod) into .local/bin/kuberay-operator
# for `make scale`, and does nothing when it was already built from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
go_tools_up_to_date kuberay-operator kuberay-operator go.mod go.sum tools.go build.sh && exit 0
pkg=github.com/ray-project/kuberay/ray-operator
go_tools_build_start kuberay-operator \
  "building $pkg@$(go list -m -f '{{.Version}}' "$pkg") from tests/kuberay-operator/go.mod"
go build -trimpath -ldflags="-s -w" -o "$GO_TOOLS_OUT/kuberay-operator" "$pkg"
go_tools_built kuberay-operator
