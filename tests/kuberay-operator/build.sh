#!/usr/bin/env bash
# Builds KubeRay's operator (the main package of its Go module, pinned in go.mod) into .local/bin/kuberay-operator
# for `make scale` and the switch tests, and its light-weight RayJob submitter (`quay.io/kuberay/submitter`'s
# `/submitter`, which the simulated kubelet runs for that image) into .local/bin/kuberay-rayjob-submitter, and
# does nothing when both were already built from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
go_tools_up_to_date kuberay-operator "kuberay-operator kuberay-rayjob-submitter" go.mod go.sum tools.go build.sh && exit 0
pkg=github.com/ray-project/kuberay/ray-operator
go_tools_build_start kuberay-operator \
  "building $pkg@$(go list -m -f '{{.Version}}' "$pkg") from tests/kuberay-operator/go.mod"
go build -trimpath -ldflags="-s -w" -o "$GO_TOOLS_OUT/kuberay-operator" "$pkg"
go build -trimpath -ldflags="-s -w" -o "$GO_TOOLS_OUT/kuberay-rayjob-submitter" "$pkg/rayjob-submitter/cmd"
go_tools_built kuberay-operator
