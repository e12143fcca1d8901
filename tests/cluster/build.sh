#!/usr/bin/env bash
# Builds the control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kubectl) from the Go
# modules pinned in go.mod into .local/bin/, and does nothing when they were already built from the same
# module files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/bin"
stamp="$out/.control-plane.stamp"
binaries=(etcd kube-apiserver kube-controller-manager kubectl)

cd "$here"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
want="$( (cat go.mod go.sum cmd/etcd/main.go build.sh; go version) | sha256sum | cut -d' ' -f1)"

up_to_date=true
for b in "${binaries[@]}"; do [ -x "$out/$b" ] || up_to_date=false; done
if $up_to_date && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "control plane: up to date in $out"
  exit 0
fi

mkdir -p "$out"
# Stamp the release into the binaries as the Kubernetes release tooling does, so `kubectl version` and the
# API server's /version report it instead of v0.0.0.
k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
echo "control plane: building ${binaries[*]} from tests/cluster/go.mod (the first build takes several minutes)"
start=$(date +%s)
go build -trimpath -ldflags="$ldflags" -o "$out/" \
  ./cmd/etcd \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl
echo "$want" > "$stamp"
echo "control plane: built in $(( $(date +%s) - start ))s"
