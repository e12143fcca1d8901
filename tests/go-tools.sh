#!/usr/bin/env bash
# Sourced by the scripts that build test tools from a pinned Go module into .local/bin (tests/cluster/build.sh,
# tests/kuberay-operator/build.sh, tests/kuberay-hash/build.sh, tests/deploy-tools/build.sh,
# tests/registry/build.sh, tests/cosign/build.sh): one place for the build environment and for the stamp that makes a
# second run free.
#
#   go_tools_up_to_date NAME "BINARY..." FILE...   true when every BINARY is in .local/bin and was built from
#                                                   these FILEs (hashed) with the same Go toolchain
#   go_tools_build_start NAME MESSAGE               says what is built and starts the clock
#   go_tools_built NAME                             records the stamp of the inputs and the build's duration
#
# The functions run in the module's directory: the sourcing script cds there first.

go_tools_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO_TOOLS_OUT="$go_tools_root/.local/bin"
# The toolchain on the PATH (never a downloaded one), go.mod and go.sum as committed, static binaries.
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0

go_tools_up_to_date() {
  local name=$1 binaries=$2 b
  shift 2
  go_tools_stamp="$GO_TOOLS_OUT/.$name.stamp"
  go_tools_want="$( (cat "$@"; go version) | sha256sum | cut -d' ' -f1)"
  for b in $binaries; do [ -x "$GO_TOOLS_OUT/$b" ] || return 1; done
  [ -f "$go_tools_stamp" ] && [ "$(cat "$go_tools_stamp")" = "$go_tools_want" ] || return 1
  echo "$name: up to date in $GO_TOOLS_OUT"
}

go_tools_build_start() {
  mkdir -p "$GO_TOOLS_OUT"
  rm -f "$go_tools_stamp"
  echo "$1: $2"
  go_tools_start=$(date +%s)
}

go_tools_built() {
  echo "$go_tools_want" > "$go_tools_stamp"
  echo "$1: built in $(( $(date +%s) - go_tools_start ))s"
}
