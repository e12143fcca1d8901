#!/usr/bin/env bash
# The local demo. For now it shows the control plane that `make cluster` started: a real kube-apiserver, a
# simulated node, and a real Ray head running in a Pod's network namespace, reached through the API server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export KUBECONFIG=$PWD/.local/kubeconfig
kubectl=$PWD/.local/bin/kubectl
ns=demo

echo "== The control plane"
$kubectl get --raw /readyz && echo
$kubectl get nodes -o wide

echo
echo "== A Ray head Pod (a real 'ray start --head' in the Pod's network namespace) behind a headless Service"
$kubectl create namespace $ns --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
$kubectl apply -n $ns -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: demo-head
  labels: {ray.io/cluster: demo, ray.io/node-type: head, ray.io/group: headgroup}
spec:
  containers:
  - name: ray-head
    image: rayproject/ray:2.60.0
    ports:
    - {name: gcs-server, containerPort: 6379}
    - {name: dashboard, containerPort: 8265}
    - {name: client, containerPort: 10001}
    - {name: serve, containerPort: 8000}
---
apiVersion: v1
kind: Service
metadata: {name: demo-head-svc}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {ray.io/cluster: demo, ray.io/node-type: head}
  ports:
  - {name: dashboard, port: 8265}
  - {name: serve, port: 8000}
YAML
echo "waiting for the Ray head to become Ready (about 20s on 2 cores)..."
$kubectl wait -n $ns --for=condition=Ready pod/demo-head --timeout=180s
$kubectl get pods -n $ns -o wide

proxy=/api/v1/namespaces/$ns/services/demo-head-svc:dashboard/proxy
echo
echo "== GET $proxy/api/gcs_healthz"
$kubectl get --raw "$proxy/api/gcs_healthz" && echo
id=demo-$(date +%s)
echo
echo "== Submitting a Ray job through the API server's service proxy"
$kubectl create --raw "$proxy/api/jobs/" -f - <<JSON && echo
{"entrypoint": "python -c \"import ray; ray.init(); print('hello from Ray', ray.__version__)\"", "submission_id": "$id"}
JSON
for _ in $(seq 1 120); do
  status=$($kubectl get --raw "$proxy/api/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  [[ $status =~ ^(SUCCEEDED|FAILED|STOPPED)$ ]] && break
  sleep 1
done
echo "job $id: $status"
echo "logs:"
$kubectl get --raw "$proxy/api/jobs/$id/logs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["logs"])'

cat <<TXT
The cluster keeps running. Try:
  export KUBECONFIG=$KUBECONFIG
  $kubectl get pods -A -o wide
  $kubectl get --raw '$proxy/api/jobs/'
Stop it and remove everything:
  make cluster-down
TXT
