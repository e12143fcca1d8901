#!/usr/bin/env bash
# Builds KubeRay's operator (the main package of its Go module, pinned in go.mod) into .local/bin/kuberay-operator
# for `make scale`, and does nothing when it was already built from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/bin"
stamp="$out/.kuberay-operator.stamp"
pkg=github.com/ray-project/kuberay/ray-operator

cd "$here"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
want="$( (cat go.mod go.sum tools.go build.sh; go version) | sha256sum | cut -d' ' -f1)"
if [ -x "$out/kuberay-operator" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "kuberay-operator: up to date in $out"
  exit 0
fi
mkdir -p "$out"
echo "kuberay-operator: building $pkg@$(go list -m -f '{{.Version}}' "$pkg") from tests/kuberay-operator/go.mod"
start=$(date +%s)
go build -trimpath -ldflags="-s -w" -o "$out/kuberay-operator" "$pkg"
echo "$want" > "$stamp"
echo "kuberay-operator: built in $(( $(date +%s) - start ))s"
