#!/usr/bin/env bash
# Puts the CRDs of the batch schedulers KubeRay integrates with into .local/batch-scheduler-crds/, from their Go
# modules pinned below (the versions KubeRay v1.7.0's ray-operator/go.mod requires):
#
# - scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1), copied from the module
#   sigs.k8s.io/scheduler-plugins (config/crd/bases). The module proxy lists no versions of it, but serves
#   exact ones;
# - Volcano's PodGroup and Queue (scheduling.volcano.sh/v1beta1): the module volcano.sh/apis ships Go types, not
#   YAML, so they are generated with controller-gen (sigs.k8s.io/controller-tools, built into .local/bin) from
#   its pkg/apis/scheduling/v1beta1 package.
#
# KAI's CRDs are not needed: KubeRay's kai-scheduler integration only writes Pods' scheduler name and labels.
# YuniKorn has no CRDs. The test environment installs these next to the ray.io and Gateway API CRDs
# (kuberay-testenv's `Env::install_crds`). Does nothing when they were already made from the same versions.
set -euo pipefail

# The one place the versions are pinned.
scheduler_plugins=sigs.k8s.io/scheduler-plugins@v0.33.5
volcano_apis=volcano.sh/apis@v1.13.0
controller_tools=sigs.k8s.io/controller-tools@v0.20.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.local/batch-scheduler-crds"
bin="$root/.local/bin"
stamp="$out/.stamp"

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
want="$( (echo "$scheduler_plugins $volcano_apis $controller_tools"; cat "$here/fetch.sh"; go version) \
  | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "batch-schedulers: CRDs up to date in $out"
  exit 0
fi
start=$(date +%s)

# `go mod download -json` prints the module's directory in the module cache (downloading it if needed).
module_dir() {
  local dir
  dir=$(cd "$here" && go mod download -json "$1" \
    | sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "batch-schedulers: the module proxy did not serve $1" >&2
    exit 1
  fi
  echo "$dir"
}

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/crds" "$bin"

# scheduler-plugins: the PodGroup CRD as the module ships it.
sp_dir=$(module_dir "$scheduler_plugins")
sp_crd="$sp_dir/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
if [ ! -f "$sp_crd" ]; then
  echo "batch-schedulers: $scheduler_plugins has no config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" >&2
  exit 1
fi
cp "$sp_crd" "$tmp/crds/"

# controller-gen, built from its module (outside any main module: `go install module@version`).
echo "batch-schedulers: building controller-gen ($controller_tools)"
GOBIN="$tmp/bin" go install "${controller_tools%@*}/cmd/controller-gen@${controller_tools#*@}"
cp "$tmp/bin/controller-gen" "$bin/controller-gen"

# Volcano: the CRDs of the scheduling.volcano.sh/v1beta1 types, generated in a writable copy of the module
# (its go.mod and go.sum name the dependencies controller-gen loads).
vc_dir=$(module_dir "$volcano_apis")
cp -r "$vc_dir" "$tmp/volcano-apis"
chmod -R u+w "$tmp/volcano-apis"
(cd "$tmp/volcano-apis" && "$bin/controller-gen" crd:crdVersions=v1 \
  paths=./pkg/apis/scheduling/v1beta1/... output:crd:dir="$tmp/volcano-crds")
for kind in podgroups queues; do
  f="$tmp/volcano-crds/scheduling.volcano.sh_$kind.yaml"
  if [ ! -f "$f" ]; then
    echo "batch-schedulers: controller-gen made no $(basename "$f") from $volcano_apis" >&2
    ls "$tmp/volcano-crds" >&2 || true
    exit 1
  fi
  cp "$f" "$tmp/crds/"
done

rm -rf "$out"
mkdir -p "$out"
cp "$tmp/crds/"*.yaml "$out/"
chmod -R u+w "$out"
echo "$want" > "$stamp"
echo "batch-schedulers: CRDs in $out ($(cd "$out" && echo *.yaml)) in $(( $(date +%s) - start ))s"
