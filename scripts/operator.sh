#!/usr/bin/env bash
# Starts or stops the demo operator: target/debug/kuberay-wasm against the `make cluster` environment,
# with the plugins of .local/plugins, in the background (log in .local/operator.log).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pidfile=.local/operator.pid
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "${1:-}" in
  start)
    if running; then
      echo "operator: already running (pid $(cat $pidfile))"
      exit 0
    fi
    setsid target/debug/kuberay-wasm operator \
      --plugins .local/plugins \
      --kubeconfig .local/kubeconfig \
      --cache-dir .local/cache \
      --metrics-bind-address 127.0.0.1:8080 \
      --health-probe-bind-address 127.0.0.1:8082 \
      >.local/operator.log 2>&1 </dev/null &
    echo $! >"$pidfile"
    for _ in $(seq 1 100); do
      if curl -fsS http://127.0.0.1:8082/readyz >/dev/null 2>&1; then
        echo "operator: ready (pid $(cat $pidfile), log .local/operator.log, metrics http://127.0.0.1:8080/metrics)"
        exit 0
      fi
      running || { echo "operator: exited; see .local/operator.log"; tail -20 .local/operator.log; exit 1; }
      sleep 0.2
    done
    echo "operator: not ready after 20s; see .local/operator.log"
    exit 1
    ;;
  stop)
    if running; then
      kill -TERM "$(cat $pidfile)"
      for _ in $(seq 1 100); do running || break; sleep 0.2; done
      echo "operator: stopped"
    fi
    rm -f "$pidfile"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
