#!/usr/bin/env bash
# `make demo-incluster`: the operator deployed into the local cluster with its Helm chart, as a platform team
# deploys it. The simulated kubelet runs the chart's Pods for real: the chart's image (kuberay-wasm:0.1.0) is
# mapped to this tree's operator binary, with .local/plugins at the image's plugin directory, so each Pod runs
# `kuberay-wasm operator` with its ServiceAccount's in-cluster configuration and the chart's RBAC. Two replicas
# elect a leader on a Lease; the demo shows the leader reconciling KubeRay's sample RayCluster, kills the
# leader's process (SIGKILL) and shows another replica taking the Lease and reconciling. It leaves the release
# running; `helm uninstall` (printed at the end) or `make cluster-down` removes it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export KUBECONFIG=$PWD/.local/kubeconfig
kubectl=$PWD/.local/bin/kubectl
helm=$PWD/.local/bin/helm
release=kuberay-wasm
ns=kuberay-system
work=demo-incluster
image=kuberay-wasm:0.1.0
lease=kuberay-wasm-leader
pods_of_release=app.kubernetes.io/name=kuberay-wasm

state_dir=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["state_dir"])' .local/cluster.json)

leader_identity() {
    $kubectl get lease $lease -n $ns -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true
}

# The operator Pod whose name the Lease holder's identity starts with.
leader_pod() {
    local holder
    holder=$(leader_identity)
    for pod in $($kubectl get pods -n $ns -l $pods_of_release -o jsonpath='{.items[*].metadata.name}'); do
        if [[ -n "$holder" && "$holder" == "$pod"* ]]; then
            echo "$pod"
            return
        fi
    done
}

wait_for_leader_other_than() {
    local previous=$1 holder
    for _ in $(seq 1 120); do
        holder=$(leader_identity)
        if [[ -n "$holder" && "$holder" != "$previous" ]] && [[ -n "$(leader_pod)" ]]; then
            return
        fi
        sleep 0.5
    done
    echo "no new leader after 60 s" >&2
    exit 1
}

echo "== The operator outside the cluster is stopped (make demo's), so only the chart's replicas reconcile"
bash scripts/operator.sh stop

echo
echo "== The chart's image, mapped for the simulated kubelet"
mkdir -p "$state_dir/images.d"
cat > "$state_dir/images.d/demo-incluster.yaml" <<EOF
$image:
  entrypoint: $PWD/target/debug/kuberay-wasm
  entrypointPath: /usr/local/bin/kuberay-wasm
  paths:
    /opt/kuberay-wasm/plugins: $PWD/.local/plugins
EOF
cat "$state_dir/images.d/demo-incluster.yaml"

echo
echo "== helm upgrade --install $release deploy/helm/kuberay-wasm (two replicas, leader election, watching $work)"
$kubectl create namespace $work --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
# Fake Ray heads in this namespace: the demo is about the operator, not Ray.
$kubectl annotate namespace $work testenv.kuberay-wasm.io/ray-head=fake --overwrite >/dev/null
$helm upgrade --install $release deploy/helm/kuberay-wasm --namespace $ns --create-namespace \
    --set replicas=2 --set "watchNamespaces={$work}" >/dev/null
$helm list --namespace $ns
$kubectl rollout status deployment/$release -n $ns --timeout=180s
$kubectl get pods -n $ns -l $pods_of_release -o wide
for _ in $(seq 1 120); do [[ -n "$(leader_pod)" ]] && break; sleep 0.5; done
first=$(leader_identity)
echo "leader: $first (Pod $(leader_pod)); the other replica is the standby:"
for pod in $($kubectl get pods -n $ns -l $pods_of_release -o jsonpath='{.items[*].metadata.name}'); do
    echo "  $pod /readyz: $($kubectl get --raw "/api/v1/namespaces/$ns/pods/$pod:8082/proxy/readyz")"
done

echo
echo "== KubeRay's sample RayCluster, reconciled by the leader"
$kubectl apply --server-side -n $work -f tests/fixtures/kuberay-samples/ray-cluster.sample.yaml >/dev/null
$kubectl wait -n $work --for=jsonpath='{.status.state}'=ready raycluster/raycluster-kuberay --timeout=180s
$kubectl get pods -n $work -o wide

echo
killed=$(leader_pod)
echo "== The leader's process is killed (SIGKILL, as a crash): Pod $killed"
$kubectl annotate pod -n $ns "$killed" "testenv.kuberay-wasm.io/kill=$(date +%s)" --overwrite >/dev/null
start=$(date +%s)
wait_for_leader_other_than "$first"
echo "new leader after $(( $(date +%s) - start )) s (the lease lasts 15 s): $(leader_identity) (Pod $(leader_pod))"
$kubectl get pods -n $ns -l $pods_of_release
$kubectl get lease $lease -n $ns

echo
echo "== The new leader reconciles: the sample's workers scaled from 1 to 2"
$kubectl patch raycluster -n $work raycluster-kuberay --type=json \
    -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":2}]' >/dev/null
$kubectl wait -n $work --for=jsonpath='{.status.availableWorkerReplicas}'=2 raycluster/raycluster-kuberay --timeout=120s
$kubectl get pods -n $work -o wide

echo
echo "The release keeps running. Try:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $kubectl get pods,lease -n $ns"
echo "  ls $state_dir/logs/pods/   # the operator Pods' logs (JSON lines)"
echo "  $helm uninstall $release --namespace $ns"
