#!/usr/bin/env bash
# Builds cert-manager's controllers (main.go over the module github.com/cert-manager/cert-manager, pinned in
# go.mod at the version KubeRay v1.7.0 requires) into .local/bin/cert-manager-controller, and copies the module's
# CRDs (deploy/crds: Certificate, CertificateRequest, Issuer, ClusterIssuer, Order, Challenge) into
# .local/cert-manager-crds. The test environment's control plane installs those CRDs and runs the controller
# (tests/support/src/controlplane/cert_manager.rs), so RayClusters with `tlsOptions` get real certificates.
# Does nothing when both were already made from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
crds="$go_tools_root/.local/cert-manager-crds"
if go_tools_up_to_date cert-manager cert-manager-controller go.mod go.sum main.go build.sh && [ -d "$crds" ]; then
  exit 0
fi
module=github.com/cert-manager/cert-manager
version=$(go list -m -f '{{.Version}}' "$module")
go_tools_build_start cert-manager "building cert-manager $version's controllers from tests/cert-manager"
go build -trimpath -ldflags="-s -w" -o "$GO_TOOLS_OUT/cert-manager-controller" .
dir=$(go list -m -f '{{.Dir}}' "$module")
rm -rf "$crds.tmp"
mkdir -p "$crds.tmp"
for crd in cert-manager.io_certificates cert-manager.io_certificaterequests cert-manager.io_issuers \
  cert-manager.io_clusterissuers acme.cert-manager.io_orders acme.cert-manager.io_challenges; do
  if [ ! -f "$dir/deploy/crds/$crd.yaml" ]; then
    echo "cert-manager: $module@$version has no deploy/crds/$crd.yaml" >&2
    exit 1
  fi
  cp "$dir/deploy/crds/$crd.yaml" "$crds.tmp/"
done
chmod -R u+w "$crds.tmp"
rm -rf "$crds"
mv "$crds.tmp" "$crds"
go_tools_built cert-manager
