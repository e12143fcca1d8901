#!/usr/bin/env bash
# The local demo: the operator with its WebAssembly plugins against the `make cluster` control plane. It
# applies KubeRay's sample RayCluster unchanged, shows it becoming ready (with a real Ray head in the head
# Pod's network namespace), prints what the RayCluster plugin created, then runs a RayJob to completion on
# a real Ray head twice: with the operator reaching the head directly, and with the operator where no Pod
# is reachable, through the API server's proxy (`--use-kubernetes-proxy`), and, still through the proxy,
# brings KubeRay's sample RayService up and sends requests to its Serve applications. Last, the REST backend
# (kuberay-apiserver): a user who is not an admin creates a cluster with curl, submits a job to it and
# deletes it, and a user without rights is refused. Everything is left running.
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
$kubectl wait --for condition=established --timeout=60s crd/rayclusters.ray.io crd/rayjobs.ray.io crd/rayservices.ray.io >/dev/null
$kubectl get crds -o name | grep ray.io

echo
echo "== The operator and its plugins"
bash scripts/operator.sh stop  # a rerun may find it in proxy mode
bash scripts/operator.sh start
target/debug/kuberay-wasm inspect .local/plugins/raycluster.wasm
target/debug/kuberay-wasm inspect .local/plugins/rayjob.wasm
target/debug/kuberay-wasm inspect .local/plugins/rayservice.wasm
target/debug/kuberay-wasm inspect .local/plugins/raycronjob.wasm

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

# Applies scripts/demo/rayjob.yaml as RayJob $1, follows it to the end, and shows its status and log.
run_rayjob() {
  local name=$1 status deploy job_status cluster job_id
  sed "s/name: rayjob-demo/name: $name/" scripts/demo/rayjob.yaml | $kubectl apply --server-side -n $ns -f -
  for i in $(seq 1 90); do
    status=$($kubectl get rayjob -n $ns "$name" -o json 2>/dev/null | python3 -c \
      'import json,sys; s=json.load(sys.stdin).get("status",{}); print(*(s.get(k) or "-" for k in ("jobDeploymentStatus","jobStatus","rayClusterName","jobId")))' \
      || echo "- - - -")
    read -r deploy job_status cluster job_id <<<"$status"
    printf '  %3ss  jobDeploymentStatus=%-12s jobStatus=%-9s cluster=%s\n' "$((i * 2))" "$deploy" "$job_status" "$cluster"
    [[ $deploy =~ ^(Complete|Failed|ValidationFailed)$ ]] && break
    sleep 2
  done
  [ "$deploy" = Complete ] || { echo "RayJob $name did not complete; see .local/operator.log"; exit 1; }
  echo
  $kubectl get rayjob -n $ns "$name"
  echo "status:"
  $kubectl get rayjob -n $ns "$name" -o json | python3 -c \
    'import json,sys; s=json.load(sys.stdin)["status"]; [print(f"  {k}: {s[k]}") for k in ("jobDeploymentStatus","jobStatus","jobId","rayClusterName","dashboardURL","startTime","endTime","succeeded","reason","message") if k in s]'
  echo "the Ray job's output (its log, read through the API server's services proxy):"
  local logs=""
  for _ in $(seq 1 15); do  # the driver's output reaches the log shortly after the job ends
    logs=$($kubectl get --raw "/api/v1/namespaces/$ns/services/$cluster-head-svc:dashboard/proxy/api/jobs/$job_id/logs" \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["logs"])')
    grep -q 'squares computed' <<<"$logs" && break
    sleep 1
  done
  grep -v -e '^\s*$' -e $'\tINFO ' <<<"$logs" | tail -3 | sed 's/^/  | /'
}

echo
echo "== A RayJob (HTTPMode): the operator submits it to a real Ray head it reaches directly"
run_rayjob rayjob-demo

echo
echo "== The same with --use-kubernetes-proxy, the operator where no Pod address is reachable"
bash scripts/operator.sh stop
bash scripts/operator.sh start --proxy
opns=$(python3 -c "import json; print(json.load(open('.local/cluster.json'))['operator_netns'])")
head_ip=$($kubectl get pod -n $ns "$head" -o jsonpath='{.status.podIP}')
if ip netns exec "$opns" curl -s --max-time 2 "http://$head_ip:8265/api/version" >/dev/null; then
  echo "unexpected: the head Pod $head_ip is reachable from the operator's network namespace"; exit 1
fi
echo "from the operator's network namespace ($opns), the head Pod's address $head_ip does not answer"
run_rayjob rayjob-demo-proxy

echo
echo "== A RayService (still through the proxy): KubeRay's sample, its Serve applications imported from"
echo "   tests/ray/apps since nothing can be downloaded here (tests/fixtures/rayservice/)"
svc=rayservice-sample
$kubectl apply --server-side -n $ns -f tests/fixtures/rayservice/ray-service.sample.local.yaml
echo "waiting for it to become Ready (Ray, then Serve and eight replicas start on the real head)..."
for i in $(seq 1 180); do
  status=$($kubectl get rayservice -n $ns $svc -o json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin).get("status", {})
ready = next((c["status"] for c in s.get("conditions", []) if c["type"] == "Ready"), "-")
apps = s.get("activeServiceStatus", {}).get("applicationStatuses", {})
active = s.get("activeServiceStatus", {}).get("rayClusterName")
pending = s.get("pendingServiceStatus", {}).get("rayClusterName")
print(ready, active or (pending and pending + "(pending)") or "-",
      ",".join("{}={}".format(n, a.get("status")) for n, a in sorted(apps.items())) or "-")' || echo "- - -")
  read -r ready active apps <<<"$status"
  printf '  %3ss  Ready=%-5s cluster=%s applications=%s\n' "$((i * 2))" "$ready" "$active" "$apps"
  [ "$ready" = True ] && break
  sleep 2
done
[ "$ready" = True ] || { echo "the RayService did not become Ready; see .local/operator.log"; exit 1; }
$kubectl get rayservice -n $ns $svc
$kubectl get services -n $ns -l ray.io/originated-from-crd=RayService
echo "the head Pod's Serve proxy answers /-/healthz, so the plugin labelled it ray.io/serve=true (into the serve Service):"
$kubectl get pods -n $ns -l ray.io/cluster="$active",ray.io/node-type=head -L ray.io/serve --no-headers | sed 's/^/  /'
serve=/api/v1/namespaces/$ns/services/$svc-serve-svc:serve/proxy
for request in 'fruit/ ["MANGO", 2]' 'calc/ ["MUL", 3]'; do
  read -r path body <<<"$request"
  # The Service also selects the worker Pod, which the simulated kubelet runs without Ray: retry until the
  # request lands on the head.
  for _ in $(seq 1 20); do
    answer=$($kubectl create --raw "$serve/$path" -f - <<<"$body" 2>/dev/null) && break
    sleep 0.5
  done
  echo "POST $svc-serve-svc:8000/$path $body -> ${answer:-no answer}"
done

echo
echo "the operator's Ray requests by route (kuberay_wasm_ray_requests_total): the Serve and Jobs APIs through"
echo "the head Service's proxy, the Serve proxy's health through the head Pod's. An http-error is Ray's 404 for"
echo "a job not submitted yet, which the RayJob plugin asks about before it submits; a proxy-pod unavailable or"
echo "http-error is a health probe of the head's Serve proxy before Serve ran there:"
bash scripts/operator.sh metrics | { grep '^kuberay_wasm_ray_requests_total' || echo "(none since it started)"; } | sed 's/^/  /'

echo
echo "== The REST API (kuberay-apiserver): bob, who may use Ray in namespace demo-api only, with curl"
ans=demo-api
$kubectl apply --server-side -f apiserver/deploy/user-role.yaml >/dev/null
$kubectl create namespace $ans --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
$kubectl create rolebinding bob-ray --clusterrole=kuberay-apiserver-user --user=bob -n $ans \
  --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
bash scripts/apiserver.sh stop >/dev/null
bash scripts/apiserver.sh start
api=http://127.0.0.1:8888/apis/v1/namespaces/$ans
bob=$(bash scripts/apiserver.sh token bob)
alice=$(bash scripts/apiserver.sh token alice)
# Runs curl as user $1 (a token, or "-" for none) with the rest of the arguments, and prints the answer.
call() {
  local who=$1; shift
  local auth=(); [ "$who" = - ] || auth=(-H "Authorization: Bearer $who")
  curl -sS "${auth[@]}" -w '\n' "$@"
}
short() { python3 -c 'import sys; t=sys.stdin.read().strip(); print("  " + (t if len(t) < 400 else t[:400] + "..."))'; }
field() { python3 -c 'import json,sys; v=json.load(sys.stdin); [v := v.get(k, {}) for k in sys.argv[1:]]; print(v or "-")' "$@"; }

echo "bob: POST $api/compute_templates"
call "$bob" -X POST "$api/compute_templates" -d '{"name": "small", "cpu": 1, "memory": 1}' | short
echo "bob: POST $api/clusters"
call "$bob" -X POST "$api/clusters" -d '{
  "name": "api-demo", "user": "bob", "version": "2.9.0",
  "clusterSpec": {
    "headGroupSpec": {"computeTemplate": "small", "rayStartParams": {"dashboard-host": "0.0.0.0"}},
    "workerGroupSpec": [{"groupName": "small", "computeTemplate": "small", "replicas": 1, "maxReplicas": 2,
                         "rayStartParams": {}}]}}' | short
echo "bob: GET $api/clusters/api-demo until clusterState is ready (the operator creates the Pods)..."
for i in $(seq 1 60); do
  state=$(call "$bob" "$api/clusters/api-demo" | field clusterState)
  printf '  %3ss  clusterState=%s\n' "$((i * 2))" "$state"
  [ "$state" = ready ] && break
  sleep 2
done
[ "$state" = ready ] || { echo "the cluster did not become ready; see .local/operator.log"; exit 1; }
echo "bob: POST $api/jobsubmissions/api-demo (the server reaches the Ray head the way the operator does)"
sid=$(call "$bob" -X POST "$api/jobsubmissions/api-demo" \
  -d '{"entrypoint": "python -c \"print(sum(range(10)), \\\"computed through kuberay-apiserver\\\")\""}' | field submissionId)
echo "  submissionId: $sid"
for _ in $(seq 1 60); do
  status=$(call "$bob" "$api/jobsubmissions/api-demo/$sid" | field status)
  [[ $status =~ ^(SUCCEEDED|FAILED|STOPPED)$ ]] && break
  sleep 1
done
echo "  status: $status"
echo "bob: GET $api/jobsubmissions/api-demo/log/$sid"
call "$bob" "$api/jobsubmissions/api-demo/log/$sid" | field log | grep -v -e '^\s*$' | tail -2 | sed 's/^/  | /'
proxy=http://127.0.0.1:8888/api/v1/namespaces/$ans/services/http:api-demo-head-svc:8265/proxy
echo "bob opens the cluster's Ray dashboard through the backend (KubeRay's apiserver v2 Services proxy, as bob):"
echo "  GET $proxy/"
call "$bob" "$proxy/" | { grep -o '<title>[^<]*</title>' || echo "(no page title)"; } | head -1 | sed 's/^/  /'
echo "  GET $proxy/api/jobs/ (the dashboard's Jobs API)"
call "$bob" "$proxy/api/jobs/" | python3 -c 'import json,sys; print("  %d job(s): %s" % (len(j := json.load(sys.stdin)), ", ".join(x["submission_id"] + " " + x["status"] for x in j)))'
echo "alice (no rights): GET $api/clusters"
call "$alice" -w '  HTTP %{http_code}\n' "$api/clusters" | short
echo "nobody (no token): GET $api/clusters"
call - -w '  HTTP %{http_code}\n' "$api/clusters" | short
echo "bob: DELETE $api/clusters/api-demo"
call "$bob" -w '  HTTP %{http_code}\n' -X DELETE "$api/clusters/api-demo" | short
echo "bob: GET $api/clusters/api-demo"
call "$bob" -w '  HTTP %{http_code}\n' "$api/clusters/api-demo" | short
echo "the server's log names the user of every call:"
grep -E 'route=' .local/apiserver.log | tail -3 | sed 's/^/  /'

cat <<TXT

Everything keeps running. Try:
  export KUBECONFIG=$KUBECONFIG
  $kubectl get rayclusters,rayjobs,rayservices,pods,services -n $ns
  $kubectl patch raycluster -n $ns $cluster --type=json -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":3}]'
  echo '["PEAR", 3]' | $kubectl create --raw $serve/fruit/ -f -
  bash scripts/operator.sh metrics | grep kuberay_wasm_reconciles
  tail -f .local/operator.log
  curl -s -H "Authorization: Bearer \$(bash scripts/apiserver.sh token bob)" $api/clusters
  curl -s http://127.0.0.1:8888/openapi.json | python3 -m json.tool | less
The operator now runs in proxy mode; to go back to direct mode:
  bash scripts/operator.sh stop && bash scripts/operator.sh start
Stop the operator and the cluster and remove everything:
  make cluster-down
TXT
