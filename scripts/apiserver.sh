#!/usr/bin/env bash
# Starts or stops the demo's REST/gRPC backend: target/debug/kuberay-apiserver against the `make cluster`
# environment, as its own ServiceAccount (apiserver/deploy/rbac.yaml: token reviews and impersonation, no
# other right), in the background (log in .local/apiserver.log). REST on 127.0.0.1:8888, gRPC on :8887.
#
#   apiserver.sh start [flags...]   extra flags go to kuberay-apiserver (e.g. --use-kubernetes-proxy)
#   apiserver.sh stop
#   apiserver.sh token USER         print the bearer token of the environment's user (alice, bob)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export KUBECONFIG=$PWD/.local/kubeconfig
kubectl=$PWD/.local/bin/kubectl
pidfile=.local/apiserver.pid
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
env_field() { python3 -c "import json,sys; print(json.load(open('.local/cluster.json'))$1)"; }

case "${1:-}" in
  start)
    if running; then
      echo "apiserver: already running (pid $(cat $pidfile))"
      exit 0
    fi
    shift
    $kubectl apply --server-side -f apiserver/deploy/rbac.yaml >/dev/null
    token=$($kubectl create token kuberay-apiserver -n kuberay-system --duration 24h)
    cat >.local/apiserver.kubeconfig <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$(env_field "['server']")", certificate-authority: "$(env_field "['ca_cert']")"}}]
users: [{name: kuberay-apiserver, user: {token: "$token"}}]
contexts: [{name: local, context: {cluster: local, user: kuberay-apiserver}}]
current-context: local
KUBECONFIG
    chmod 600 .local/apiserver.kubeconfig
    rm -f "$pidfile"
    setsid bash -c 'echo $$ >"$0" && exec "$@"' "$pidfile" target/debug/kuberay-apiserver \
      --kubeconfig .local/apiserver.kubeconfig --grpc-bind-address 127.0.0.1:8887 \
      --http-bind-address 127.0.0.1:8888 --log-format text "$@" >.local/apiserver.log 2>&1 </dev/null &
    # Until the pid file is written, `running` cannot tell a starting server from one that exited.
    for _ in $(seq 1 50); do [ -s "$pidfile" ] && break; sleep 0.1; done
    for _ in $(seq 1 100); do
      if curl -fsS http://127.0.0.1:8888/readyz >/dev/null 2>&1; then
        echo "apiserver: ready on http://127.0.0.1:8888 (REST) and 127.0.0.1:8887 (gRPC), log .local/apiserver.log"
        exit 0
      fi
      running || { echo "apiserver: exited; see .local/apiserver.log"; tail -20 .local/apiserver.log; exit 1; }
      sleep 0.1
    done
    echo "apiserver: not ready after 10s; see .local/apiserver.log"
    exit 1
    ;;
  stop)
    if running; then
      kill -TERM "$(cat $pidfile)"
      for _ in $(seq 1 100); do running || break; sleep 0.2; done
      running && kill -KILL "$(cat $pidfile)"
      echo "apiserver: stopped"
    fi
    rm -f "$pidfile"
    ;;
  token)
    env_field "['identities']['${2:?user}']['token']"
    ;;
  *)
    echo "usage: $0 start [flags...] | stop | token USER" >&2
    exit 2
    ;;
esac
