#!/usr/bin/env bash
# Builds helm and kustomize (their Go modules, pinned in go.mod) into .local/bin for the tests of the Helm chart
# and the kustomize manifests in deploy/ (tests/deploy), and does nothing when they were already built from the
# same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
go_tools_up_to_date deploy-tools "helm kustomize" go.mod go.sum tools.go build.sh && exit 0
helm=helm.sh/helm/v3
kustomize=sigs.k8s.io/kustomize/kustomize/v5
helm_version=$(go list -m -f '{{.Version}}' "$helm")
go_tools_build_start deploy-tools \
  "building helm $helm_version and kustomize $(go list -m -f '{{.Version}}' "$kustomize") from tests/deploy-tools/go.mod"
# Both report their version from variables the release builds set; without them they print v0.0.0/unknown.
go build -trimpath -ldflags="-s -w -X $helm/internal/version.version=$helm_version" \
  -o "$GO_TOOLS_OUT/helm" "$helm/cmd/helm"
go build -trimpath -ldflags="-s -w" -o "$GO_TOOLS_OUT/kustomize" "$kustomize"
go_tools_built deploy-tools
