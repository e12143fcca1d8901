#!/usr/bin/env bash
# Copies the Gateway API CRDs that RayService's NewClusterWithIncrementalUpgrade needs (GatewayClass,
# Gateway, HTTPRoute; standard channel) from the Go module sigs.k8s.io/gateway-api, pinned below, into
# .local/gateway-api-crds/. The test environment installs them next to the ray.io CRDs
# (kuberay-testenv's `Env::install_crds`). Does nothing when they were already copied from the same version.
set -euo pipefail

# The one place the version is pinned. v1.6.3 builds with the local Go toolchain; v1.7.0 does not.
version=v1.6.3
module=sigs.k8s.io/gateway-api
kinds=(gatewayclasses gateways httproutes)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/gateway-api-crds"
stamp="$out/.stamp"

want="$( (echo "$module@$version ${kinds[*]}"; cat "$here/fetch.sh") | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "gateway-api: CRDs $version up to date in $out"
  exit 0
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=mod
# `go mod download -json` prints the module's directory in the module cache (downloading it if needed).
dir=$(cd "$here" && go mod download -json "$module@$version" \
  | sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir/config/crd/standard" ]; then
  echo "gateway-api: $module@$version has no config/crd/standard in the module cache" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out"
for kind in "${kinds[@]}"; do
  cp "$dir/config/crd/standard/gateway.networking.k8s.io_$kind.yaml" "$out/"
done
chmod -R u+w "$out"
echo "$want" > "$stamp"
echo "gateway-api: CRDs of $module@$version in $out (${kinds[*]})"
