#!/usr/bin/env bash
# Builds the control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kubectl) from the Go
# modules pinned in go.mod into .local/bin/, and does nothing when they were already built from the same
# module files with the same Go toolchain.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
source ../go-tools.sh
binaries=(etcd kube-apiserver kube-controller-manager kubectl kubelet-streaming)
go_tools_up_to_date control-plane "${binaries[*]}" go.mod go.sum cmd/etcd/main.go cmd/kubelet-streaming/main.go build.sh && exit 0

# Stamp the release into the binaries as the Kubernetes release tooling does, so `kubectl version` and the
# API server's /version report it instead of v0.0.0.
k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
go_tools_build_start control-plane \
  "building ${binaries[*]} from tests/cluster/go.mod (the first build takes several minutes)"
go build -trimpath -ldflags="$ldflags" -o "$GO_TOOLS_OUT/" \
  ./cmd/etcd \
  ./cmd/kubelet-streaming \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl
go_tools_built control-plane
