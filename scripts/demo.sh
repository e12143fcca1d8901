#!/usr/bin/env bash
# The local demo: the operator with its WebAssembly plugins against the `make cluster` control plane. It
# applies KubeRay's sample RayCluster unchanged, shows it becoming ready (with a real Ray head in the head
# Pod's network namespace), prints what the RayCluster plugin created, and leaves everything running.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export KUBECONFIG=$PWD/.local/kubeconfig
kubectl=$PWD/.local/bin/kubectl
ns=demo
cluster=raycluster-kuberay

echo "== The control plane"
$kubectl get --raw /readyz && echo
$kubectl get nodes

echo
echo "== ray.io/v1 CRDs (server-side apply: they are too large for client-side apply)"
$kubectl apply --server-side -f crds/ >/dev/null
$kubectl get crds -o name | grep ray.io

echo
echo "== The operator and its plugins"
bash scripts/operator.sh start
target/debug/kuberay-wasm inspect .local/plugins/raycluster.wasm

echo
echo "== KubeRay's sample RayCluster, applied unchanged"
$kubectl create namespace $ns --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
$kubectl apply --server-side -n $ns -f tests/fixtures/kuberay-samples/ray-cluster.sample.yaml
echo "waiting for it to become ready (the real Ray head takes about 20s to start on 2 cores)..."
for i in $(seq 1 90); do
  state=$($kubectl get raycluster -n $ns $cluster -o jsonpath='{.status.state}' 2>/dev/null || true)
  pods=$($kubectl get pods -n $ns -l ray.io/cluster=$cluster --no-headers 2>/dev/null \
    | awk '{printf "%s=%s(%s) ", $1, $3, $2}')
  printf '  %3ss  state=%-6s %s\n' "$((i * 2))" "${state:-}" "$pods"
  [ "$state" = ready ] && break
  sleep 2
done
[ "$state" = ready ] || { echo "the RayCluster did not become ready; see .local/operator.log"; exit 1; }

echo
echo "== What the RayCluster plugin created"
$kubectl get raycluster -n $ns -o wide
$kubectl get pods,services -n $ns -o wide --show-labels
head=$($kubectl get pods -n $ns -l ray.io/cluster=$cluster,ray.io/node-type=head -o jsonpath='{.items[0].metadata.name}')
echo
echo "The head Pod's Ray container runs:"
$kubectl get pod -n $ns "$head" -o jsonpath='{.spec.containers[0].args[0]}' && echo
echo
echo "Events:"
$kubectl get events -n $ns --sort-by=.lastTimestamp -o custom-columns=REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message | tail -8

echo
echo "== The real Ray head answers on the head Pod's address (through the API server's pod proxy)"
$kubectl get --raw "/api/v1/namespaces/$ns/pods/$head:8265/proxy/api/version" && echo
$kubectl get --raw "/api/v1/namespaces/$ns/pods/$head:8265/proxy/api/gcs_healthz" && echo
proxy=/api/v1/namespaces/$ns/services/$cluster-head-svc:dashboard/proxy
id=demo-$(date +%s)
echo "Submitting a Ray job through the head Service's proxy:"
$kubectl create --raw "$proxy/api/jobs/" -f - <<JSON && echo
{"entrypoint": "python -c \"import ray; ray.init(); print('hello from Ray', ray.__version__)\"", "submission_id": "$id"}
JSON
for _ in $(seq 1 120); do
  status=$($kubectl get --raw "$proxy/api/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  [[ $status =~ ^(SUCCEEDED|FAILED|STOPPED)$ ]] && break
  sleep 1
done
echo "job $id: $status"
$kubectl get --raw "$proxy/api/jobs/$id/logs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["logs"])' | tail -2

cat <<TXT

Everything keeps running. Try:
  export KUBECONFIG=$KUBECONFIG
  $kubectl get rayclusters,pods,services -n $ns
  $kubectl patch raycluster -n $ns $cluster --type=json -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]'
  curl -s http://127.0.0.1:8080/metrics | grep kuberay_wasm_reconciles
  tail -f .local/operator.log
Stop the operator and the cluster and remove everything:
  make cluster-down
TXT
