#!/usr/bin/env bash
# Builds the spec-hash oracle (kuberay-hash, against KubeRay's own Go module pinned in go.mod) into
# .local/bin/, and does nothing when it was already built from the same files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/bin"
stamp="$out/.kuberay-hash.stamp"

cd "$here"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
want="$( (cat go.mod go.sum ./*.go build.sh; go version) | sha256sum | cut -d' ' -f1)"
if [ -x "$out/kuberay-hash" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "kuberay-hash: up to date in $out"
  exit 0
fi
mkdir -p "$out"
echo "kuberay-hash: building the spec-hash oracle from tests/kuberay-hash/go.mod"
start=$(date +%s)
go build -trimpath -ldflags="-s -w" -o "$out/kuberay-hash" .
echo "$want" > "$stamp"
echo "kuberay-hash: built in $(( $(date +%s) - start ))s"
