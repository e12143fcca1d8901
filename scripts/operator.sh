#!/usr/bin/env bash
# Starts or stops the demo operator: target/debug/kuberay-wasm against the `make cluster` environment, with
# the plugins of .local/plugins, in the background (log in .local/operator.log).
#
#   operator.sh start           reach Ray heads directly
#   operator.sh start --proxy   run inside the environment's operator network namespace, which has no route
#                               to any Pod, and reach Ray heads only through the API server's proxy
#   operator.sh stop
#   operator.sh metrics         print the operator's /metrics
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pidfile=.local/operator.pid
modefile=.local/operator.mode
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
env_field() { python3 -c "import json,sys; print(json.load(open('.local/cluster.json'))[sys.argv[1]])" "$1"; }
in_mode() {
  if [ "$(cat "$modefile" 2>/dev/null)" = proxy ]; then ip netns exec "$(env_field operator_netns)" "$@"; else "$@"; fi
}

case "${1:-}" in
  start)
    if running; then
      echo "operator: already running (pid $(cat $pidfile), $(cat $modefile) mode)"
      exit 0
    fi
    # Text logs (read by people in .local/operator.log); a file is not a terminal, so the default is JSON.
    args=(--log-format text operator --plugins .local/plugins --cache-dir .local/cache
      --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8082)
    command=(target/debug/kuberay-wasm "${args[@]}")
    if [ "${2:-}" = --proxy ]; then
      echo proxy >"$modefile"
      command=(ip netns exec "$(env_field operator_netns)" "${command[@]}" --use-kubernetes-proxy
        --kubeconfig "$(env_field operator_kubeconfig)")
    else
      echo direct >"$modefile"
      command+=(--kubeconfig .local/kubeconfig)
    fi
    rm -f "$pidfile"
    # The shell records its own pid, then becomes the operator (`ip netns exec` execs it too), so the pid
    # file names the operator process itself.
    setsid bash -c 'echo $$ >"$0" && exec "$@"' "$pidfile" "${command[@]}" >.local/operator.log 2>&1 </dev/null &
    for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
    # Up to 120 s: a first start compiles the four plugins (a debug build, about 10 s each on a busy 2-core
    # machine) before it is ready; later starts load them from the compiled-plugin cache.
    for _ in $(seq 1 600); do
      if in_mode curl -fsS http://127.0.0.1:8082/readyz >/dev/null 2>&1; then
        echo "operator: ready ($(cat $modefile) mode, pid $(cat $pidfile), log .local/operator.log)"
        exit 0
      fi
      running || { echo "operator: exited; see .local/operator.log"; tail -20 .local/operator.log; exit 1; }
      sleep 0.2
    done
    echo "operator: not ready after 120s; see .local/operator.log"
    exit 1
    ;;
  stop)
    if running; then
      kill -TERM "$(cat $pidfile)"
      for _ in $(seq 1 100); do running || break; sleep 0.2; done
      if running; then
        echo "operator: still running 20s after SIGTERM; killing it"
        kill -KILL "$(cat $pidfile)"
      fi
      echo "operator: stopped"
    fi
    rm -f "$pidfile" "$modefile"
    ;;
  metrics)
    in_mode curl -fsS http://127.0.0.1:8080/metrics
    ;;
  *)
    echo "usage: $0 start [--proxy] | stop | metrics" >&2
    exit 2
    ;;
esac
