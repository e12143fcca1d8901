#!/usr/bin/env bash
# Builds KubeRay's operator v1.7.0 into .local/kuberay-v1.7.0/kuberay-operator and copies its CRDs into
# .local/kuberay-v1.7.0/crds/, for `make kuberay-samples-record` (the golden object graphs of KubeRay's samples,
# tests/fixtures/kuberay-objects). Does nothing when they were already built from the same commit with the same
# Go toolchain.
#
# The Go module proxy lists ray-operator v1.7.0 but refuses its source archive (403 "This module version is not
# available"; tests/kuberay-operator/go.mod, which `make kuberay-operator` and `make scale` build, stays on
# v1.6.2 for that reason), so the source comes from a git clone of https://github.com/ray-project/kuberay named
# by KUBERAY_SRC (a work tree or a bare repository) that has the tag ray-operator/v1.7.0. The tag must point at
# the commit the module proxy's record of v1.7.0 names (`go mod download -json
# github.com/ray-project/kuberay/ray-operator@v1.7.0` prints it as Origin.Hash even while refusing the zip).
# KubeRay's ray-operator module is built as the main module, with its own go.mod and go.sum; its dependencies
# come from the module proxy.
set -euo pipefail

tag=ray-operator/v1.7.0
commit=59d663aeec13760646da3db9c1cf8cfe883e30b7

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/kuberay-v1.7.0"
stamp="$out/.stamp"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0

want="$( (echo "$commit"; cat "$here/build-v1.7.sh"; go version) | sha256sum | cut -d' ' -f1)"
if [ -x "$out/kuberay-operator" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "kuberay-operator v1.7.0: up to date in $out"
  exit 0
fi

if [ -z "${KUBERAY_SRC:-}" ]; then
  cat >&2 <<EOF
kuberay-operator v1.7.0: set KUBERAY_SRC to a git clone of https://github.com/ray-project/kuberay that has the
tag $tag (commit $commit), e.g.
  git clone --filter=blob:none https://github.com/ray-project/kuberay /tmp/kuberay
  KUBERAY_SRC=/tmp/kuberay make kuberay-samples-record
(the Go module proxy refuses v1.7.0's source archive, so it cannot be built from tests/kuberay-operator/go.mod).
EOF
  exit 1
fi
got=$(git -C "$KUBERAY_SRC" rev-parse --verify --quiet "$tag^{commit}" || true)
if [ "$got" != "$commit" ]; then
  echo "kuberay-operator v1.7.0: $KUBERAY_SRC has no tag $tag at $commit (found '${got:-nothing}')" >&2
  exit 1
fi

echo "kuberay-operator v1.7.0: building github.com/ray-project/kuberay/ray-operator at $commit from $KUBERAY_SRC"
start=$(date +%s)
rm -rf "$out"
mkdir -p "$out/src" "$out/crds"
git -C "$KUBERAY_SRC" archive "$commit" ray-operator | tar -x -C "$out/src"
(cd "$out/src/ray-operator" && go build -trimpath -ldflags="-s -w" -o "$out/kuberay-operator" .)
cp "$out/src/ray-operator/config/crd/bases/"*.yaml "$out/crds/"
rm -rf "$out/src"
echo "$want" > "$stamp"
echo "kuberay-operator v1.7.0: built in $(( $(date +%s) - start ))s"
