#!/usr/bin/env bash
# Runs an operator binary under heaptrack, for `kuberay-scale --operator-bin tests/scale/heaptrack.sh`:
#   cargo build -p kuberay-wasm --no-default-features   # the C library's allocator, which heaptrack follows
#   HEAPTRACK_BIN=target/debug/kuberay-wasm HEAPTRACK_OUT=/tmp/ours kuberay-scale --only kuberay-wasm ...
# SIGTERM (how kuberay-scale stops an operator) is passed on to the operator so heaptrack writes its data.
# Then: heaptrack_print -f "$HEAPTRACK_OUT".zst --flamegraph-cost-type peak -F stacks.txt
set -euo pipefail
bin=$(realpath "${HEAPTRACK_BIN:?the operator binary to profile}")
heaptrack -o "${HEAPTRACK_OUT:-/tmp/kuberay-wasm-heap}-$(date +%H%M%S)" "$bin" "$@" &
profiler=$!
trap 'pkill -TERM -f "^$bin" || true' TERM INT
wait "$profiler" || wait "$profiler"
