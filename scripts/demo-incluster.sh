#!/usr/bin/env bash
# `make demo-incluster`: the operator deployed into the local cluster with its Helm chart, as a platform team
# deploys it. The simulated kubelet runs the chart's Pods for real: the chart's image (kuberay-wasm:0.1.0) is
# mapped to this tree's operator binary (target/debug/kuberay-wasm, or under CARGO_TARGET_DIR), with .local/plugins
# at the image's plugin directory, so each Pod runs `kuberay-wasm operator` with its ServiceAccount's in-cluster
# configuration and the chart's RBAC.
#
# The chart runs with `disablePlugins: [raycluster]`: the RayCluster plugin is not the image's file but an OCI
# artifact in the test environment's registry, named by a ReconcilePlugin resource (docs/plugins-from-a-registry.md).
# The demo pushes it, creates the resource and its pull Secret, and then:
#   1. two replicas elect a leader on a Lease; the leader reconciles KubeRay's sample RayCluster with the plugin
#      from the registry; the leader's process is killed (SIGKILL) and another replica takes the Lease and
#      reconciles;
#   2. a second version (the same component with a custom section appended: another digest) is pushed and the
#      resource edited: both replicas swap it in (each logs `plugin loaded` with its digest), and a RayCluster
#      created before and one created after are reconciled;
#   3. bytes that are not a component are pushed as a version: refused (Degraded, NotAComponent), the previous
#      version keeps serving;
#   4. the resource points back at the first version: a rollback (PluginRolledBack), no pull, no compile.
# Every wait has a timeout; the demo stops with a message naming the step that did not happen. It leaves the release
# running; `helm uninstall` (printed at the end) or `make cluster-down` removes it.
set -euo pipefail
# A failure inside $(...) fails the assignment too (the pushes' digests).
shopt -s inherit_errexit
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export KUBECONFIG=$PWD/.local/kubeconfig
kubectl=$PWD/.local/bin/kubectl
helm=$PWD/.local/bin/helm
# The operator binary `make operator` built (in CARGO_TARGET_DIR when set, as the Makefile builds it).
kuberay_wasm=$(realpath "${CARGO_TARGET_DIR:-target}/debug/kuberay-wasm")
release=kuberay-wasm
ns=kuberay-system
work=demo-incluster
image=kuberay-wasm:0.1.0
lease=ray-operator-leader
pods_of_release=app.kubernetes.io/name=kuberay-wasm
# The label the release's operator selects ReconcilePlugin resources by (pluginResources.selector): the resources are
# cluster-scoped, and tests sharing this cluster create their own.
plugin_label=demo
plugin_label_value=incluster
# Events about cluster-scoped objects (the ReconcilePlugin) are recorded in this namespace.
events_ns=default
# Long enough for a debug build of the operator to compile the RayCluster plugin, twice at once, on two cores.
load_timeout=300

step="starting"
trap 'echo; echo "demo-incluster FAILED during: $step" >&2' ERR

# A value of .local/cluster.json, the running environment's description (`registry host_port`, `state_dir`).
cluster_json() {
    python3 - "$@" <<'EOF'
import json, sys
value = json.load(open(".local/cluster.json"))
for key in sys.argv[1:]:
    value = value.get(key) if isinstance(value, dict) else None
print("" if value is None else value)
EOF
}

# Runs `$@` every second until it succeeds; after `timeout` seconds the demo fails, saying what did not happen.
wait_for() {
    local what=$1 timeout=$2
    shift 2
    local deadline=$(( $(date +%s) + timeout ))
    until "$@" >/dev/null 2>&1; do
        if (( $(date +%s) >= deadline )); then
            echo "FAILED: $what did not happen within $timeout s" >&2
            return 1
        fi
        sleep 1
    done
}

section() {
    step=$1
    echo
    echo "== $1"
}

leader_identity() {
    $kubectl get lease $lease -n $ns -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true
}

operator_pods() {
    $kubectl get pods -n $ns -l $pods_of_release -o jsonpath='{.items[*].metadata.name}'
}

# The operator Pod whose name the Lease holder's identity starts with.
leader_pod() {
    local holder
    holder=$(leader_identity)
    for pod in $(operator_pods); do
        if [[ -n "$holder" && "$holder" == "$pod"* ]]; then
            echo "$pod"
            return
        fi
    done
}

has_leader() { [[ -n "$(leader_pod)" ]]; }

leader_other_than() {
    local holder
    holder=$(leader_identity)
    [[ -n "$holder" && "$holder" != "$1" ]] && has_leader
}

# The log of the operator container of Pod $1, written by the simulated kubelet (JSON lines).
pod_log() { echo "$state_dir/logs/pods/${ns}_$1_operator.log"; }

# How many times the operator in Pod $1 logged `plugin loaded` for the artifact with digest $2.
loaded_count() {
    local log
    log=$(pod_log "$1")
    [[ -f "$log" ]] || { echo 0; return; }
    grep -F '"plugin loaded"' "$log" | grep -cF "$2" || true
}

# Succeeds when every operator Pod logged `plugin loaded` for digest $1 more often than the counts in $2
# ("pod=count ...", empty: more than 0).
all_loaded() {
    local digest=$1 before=${2:-} pod count
    for pod in $(operator_pods); do
        count=0
        for entry in $before; do
            [[ "${entry%%=*}" == "$pod" ]] && count=${entry#*=}
        done
        (( $(loaded_count "$pod" "$digest") > count )) || return 1
    done
}

loaded_counts() {
    local digest=$1 pod out=""
    for pod in $(operator_pods); do
        out+="$pod=$(loaded_count "$pod" "$digest") "
    done
    echo "$out"
}

# Prints, for each operator Pod, its last log line whose message starts with $1 and that mentions $2, shortened.
show_log_lines() {
    local message=$1 needle=$2 pod
    for pod in $(operator_pods); do
        { grep -F "\"$message" "$(pod_log "$pod")" || true; } | { grep -F "$needle" || true; } | tail -1 | python3 -c '
import json, sys
pod = sys.argv[1]
for line in sys.stdin:
    record = json.loads(line)
    fields = record.get("fields", record)
    keep = ["plugin", "version", "origin", "reconcileplugin", "reason", "serving"]
    detail = " ".join(f"{k}={fields[k]}" for k in keep if k in fields)
    when, message = record.get("timestamp", "")[:19], fields.get("message", "").split(":")[0][:80]
    print(f"  {pod}: {when} {message} {detail}")
' "$pod"
    done
}

rp_field() {
    $kubectl get reconcileplugin raycluster -o jsonpath="$1" 2>/dev/null
}

condition() {
    rp_field "{.status.conditions[?(@.type==\"$1\")].$2}"
}

serving() { [[ "$(rp_field '{.status.digest}')" == "$1" && "$(condition Ready status)" == True ]]; }

as_requested() {
    serving "$1" && [[ "$(condition Degraded status)" == False && -z "$(rp_field '{.status.lastError}')" ]]
}

degraded_with() { [[ "$(condition Degraded status)" == True && "$(condition Degraded reason)" == "$1" ]]; }

event_recorded() {
    [[ -n "$($kubectl get events -n $events_ns -o name \
        --field-selector "involvedObject.kind=ReconcilePlugin,involvedObject.name=raycluster,reason=$1")" ]]
}

# The last $1 Events about the ReconcilePlugin.
show_events() {
    echo "Events about it (namespace $events_ns), the last $1:"
    $kubectl get events -n $events_ns --sort-by=.metadata.creationTimestamp \
        --field-selector involvedObject.kind=ReconcilePlugin,involvedObject.name=raycluster \
        -o custom-columns=TYPE:.type,REASON:.reason,FROM:.reportingInstance,MESSAGE:.message \
        | { IFS= read -r header; echo "  $header"; tail -n "$1" | sed 's/^/  /'; }
}

# Points the ReconcilePlugin at `artifact` $1.
set_artifact() {
    $kubectl patch reconcileplugin raycluster --type=merge -p "{\"spec\":{\"artifact\":\"$1\"}}" >/dev/null
}

# Pushes file $1 as tag $2 of the demo's repository, to the registry's address on this machine; prints the digest.
push() {
    local file=$1 tag=$2 pushed
    echo "  $ kuberay-wasm plugin push $file $registry_host/$repository:$tag --username $registry_user --password *** --ca-file $registry_ca" >&2
    pushed=$($kuberay_wasm --log-format text plugin push "$file" "$registry_host/$repository:$tag" \
        --username "$registry_user" --password "$registry_password" --ca-file "$registry_ca")
    echo "  $pushed" >&2
    [[ "$pushed" == *@sha256:* ]] || { echo "FAILED: plugin push printed no digest" >&2; return 1; }
    echo "${pushed##*@}"
}

ready_cluster() {
    [[ "$($kubectl get raycluster -n $work "$1" -o jsonpath='{.status.state}' 2>/dev/null)" == ready ]]
}

available_workers() {
    [[ "$($kubectl get raycluster -n $work "$1" -o jsonpath='{.status.availableWorkerReplicas}' 2>/dev/null)" == "$2" ]]
}

scale_sample() {
    $kubectl patch raycluster -n $work raycluster-kuberay --type=json \
        -p "[{\"op\":\"replace\",\"path\":\"/spec/workerGroupSpecs/0/replicas\",\"value\":$1}]" >/dev/null
}

state_dir=$(cluster_json state_dir)
registry_host=$(cluster_json registry host_port)
registry_pod=$(cluster_json registry pod_host_port)
registry_ca=$(cluster_json registry ca_path)
registry_docker_config=$(cluster_json registry docker_config_path)
registry_user=$(cluster_json registry username)
registry_password=$(cluster_json registry password)
if [[ -z "$registry_host" || -z "$registry_pod" ]]; then
    echo "the running cluster has no registry reachable from Pods (.local/cluster.json has no registry.pod_host_port):" >&2
    echo "it was started by an older kuberay-testenv; restart it with make cluster-down && make cluster" >&2
    exit 1
fi
# The kustomize manifests (tests/deploy and the host's RBAC test apply them in a shared cluster) leave objects of the
# same names in the same namespace, which Helm refuses to take over.
if $kubectl get serviceaccount $release -n $ns >/dev/null 2>&1 \
    && [[ "$($kubectl get serviceaccount $release -n $ns -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}')" != Helm ]]; then
    echo "namespace $ns holds a ServiceAccount $release that Helm did not install (the kustomize manifests, as the" >&2
    echo "tests apply them); the chart cannot take it over. Start from a fresh cluster: make cluster-down && make cluster" >&2
    exit 1
fi
repository=demo-incluster/raycluster
plugin_file=.local/plugins/raycluster.wasm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

section "The operator outside the cluster is stopped (make demo's), so only the chart's replicas reconcile"
bash scripts/operator.sh stop

section "The chart's image, mapped for the simulated kubelet"
mkdir -p "$state_dir/images.d"
cat > "$state_dir/images.d/demo-incluster.yaml" <<EOF
$image:
  entrypoint: $kuberay_wasm
  entrypointPath: /usr/local/bin/kuberay-wasm
  paths:
    /opt/kuberay-wasm/plugins: $PWD/.local/plugins
EOF
cat "$state_dir/images.d/demo-incluster.yaml"

section "The RayCluster plugin, pushed to the local OCI registry (TLS, user and password)"
echo "The registry is at $registry_host for this machine and at $registry_pod for Pods: the same registry, so the"
echo "same digest. We push to the first; the ReconcilePlugin names the second."
d1=$(push "$plugin_file" v1)
v1="$registry_pod/$repository@$d1"

section "The operator's namespace: the registry's CA (ConfigMap registry-ca) and a pull Secret (regcred)"
$kubectl create namespace $ns --dry-run=client -o yaml | $kubectl apply --server-side -f - >/dev/null
$kubectl create configmap registry-ca -n $ns --from-file=ca.crt="$registry_ca" --dry-run=client -o yaml \
    | $kubectl apply --server-side -f -
# The registry's docker config has credentials for both its addresses.
$kubectl create secret generic regcred -n $ns --type=kubernetes.io/dockerconfigjson \
    --from-file=.dockerconfigjson="$registry_docker_config" --dry-run=client -o yaml \
    | $kubectl apply --server-side -f -
# A ReconcilePlugin and RayClusters of an earlier run would reconcile before this one's; Helm installs CRDs only on a
# release's first install, so the ReconcilePlugin CRD is applied here too for a release installed before it existed.
$kubectl apply --server-side -f deploy/crds/plugins.kuberay-wasm.io_reconcileplugins.yaml >/dev/null
$kubectl delete reconcileplugin raycluster --ignore-not-found >/dev/null
$kubectl create namespace $work --dry-run=client -o yaml | $kubectl apply --server-side -f - >/dev/null
if $kubectl get crd rayclusters.ray.io >/dev/null 2>&1; then
    $kubectl delete raycluster --all -n $work --ignore-not-found --timeout=120s >/dev/null
fi

section "helm upgrade --install $release deploy/helm/kuberay-wasm (two replicas, leader election, watching $work, the RayCluster plugin from the registry)"
# Fake Ray heads in this namespace: the demo is about the operator, not Ray.
$kubectl annotate namespace $work testenv.kuberay-wasm.io/ray-head=fake --overwrite >/dev/null
values=(
    --set replicas=2
    --set "watchNamespaces={$work}"
    --set "disablePlugins={raycluster}"
    --set pluginResources.registryCA.configMap=registry-ca
    --set "pluginResources.selector=$plugin_label=$plugin_label_value"
)
echo "  values: ${values[*]}"
$helm upgrade --install $release deploy/helm/kuberay-wasm --namespace $ns "${values[@]}" >/dev/null
$helm list --namespace $ns
$kubectl rollout status deployment/$release -n $ns --timeout=180s
$kubectl get pods -n $ns -l $pods_of_release -o wide
wait_for "a leader elected" 60 has_leader
first=$(leader_identity)
echo "leader: $first (Pod $(leader_pod)); the other replica is the standby:"
for pod in $(operator_pods); do
    echo "  $pod /readyz: $($kubectl get --raw "/api/v1/namespaces/$ns/pods/$pod:8082/proxy/readyz")"
done
echo "The operator's arguments:"
$kubectl get deployment $release -n $ns -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{"  "}{@}{"\n"}{end}'

section "A ReconcilePlugin: the RayCluster plugin at $v1"
echo "Its grant is the built-in policy's raycluster entry (host/deploy/policy.yaml) without name, file and reconciles."
# Written as JSON for kubectl, printed as YAML.
.local/venv/bin/python - "$v1" "$plugin_label" "$plugin_label_value" "$tmp/raycluster-plugin.json" <<'EOF'
import json, sys, yaml
artifact, label, value, out = sys.argv[1:]
policy = yaml.safe_load(open("host/deploy/policy.yaml"))
entry = next(e for e in policy["plugins"] if e["name"] == "raycluster")
grant = {k: v for k, v in entry.items() if k not in ("name", "file", "reconciles")}
resource = {
    "apiVersion": "plugins.kuberay-wasm.io/v1alpha1", "kind": "ReconcilePlugin",
    "metadata": {"name": "raycluster", "labels": {label: value}},
    "spec": {"artifact": artifact, "reconciles": entry["reconciles"], "pullSecret": "regcred", "grant": grant},
}
json.dump(resource, open(out, "w"))
for line in yaml.safe_dump(resource, sort_keys=False, default_flow_style=None, width=110).splitlines():
    print("  " + line)
EOF
# The Pods of an earlier run (the same release, unchanged values) may have logged this digest already.
before_v1=$(loaded_counts "$d1")
$kubectl create -f "$tmp/raycluster-plugin.json" >/dev/null
echo "Each replica pulls it with regcred's credentials, trusting registry-ca, compiles and serves it:"
wait_for "the ReconcilePlugin serving $d1" $load_timeout serving "$d1"
wait_for "both replicas logging 'plugin loaded' for $d1" $load_timeout all_loaded "$d1" "$before_v1"
$kubectl get reconcileplugins
show_log_lines "plugin loaded" "$d1"

section "KubeRay's sample RayCluster, reconciled by the leader with the plugin from the registry"
$kubectl apply --server-side -n $work -f tests/fixtures/kuberay-samples/ray-cluster.sample.yaml >/dev/null
$kubectl wait -n $work --for=jsonpath='{.status.state}'=ready raycluster/raycluster-kuberay --timeout=180s
$kubectl get pods -n $work -o wide

killed=$(leader_pod)
section "The leader's process is killed (SIGKILL, as a crash): Pod $killed"
$kubectl annotate pod -n $ns "$killed" "testenv.kuberay-wasm.io/kill=$(date +%s)" --overwrite >/dev/null
start=$(date +%s)
wait_for "a new leader after the kill" 60 leader_other_than "$first"
echo "new leader after $(( $(date +%s) - start )) s (the lease lasts 15 s): $(leader_identity) (Pod $(leader_pod))"
$kubectl get pods -n $ns -l $pods_of_release
$kubectl get lease $lease -n $ns

section "The new leader reconciles: the sample's workers scaled from 1 to 2"
scale_sample 2
$kubectl wait -n $work --for=jsonpath='{.status.availableWorkerReplicas}'=2 raycluster/raycluster-kuberay --timeout=120s
$kubectl get pods -n $work -o wide
# The killed replica's container restarted: it loads the plugins (and pulls the resource's) again.
$kubectl wait pod -n $ns -l $pods_of_release --for=condition=Ready --timeout=${load_timeout}s >/dev/null

section "A new version: the same component with a custom section appended (another digest), pushed as v2"
python3 - "$plugin_file" "$tmp/raycluster-v2.wasm" <<'EOF'
import sys
source, target = sys.argv[1:]
def leb128(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
name, data = b"kuberay-wasm-demo", b"v2"
payload = leb128(len(name)) + name + data
# Section id 0 (custom), its size, its name and data: ignored by the runtime, counted by the digest.
open(target, "wb").write(open(source, "rb").read() + b"\0" + leb128(len(payload)) + payload)
EOF
d2=$(push "$tmp/raycluster-v2.wasm" v2)
v2="$registry_pod/$repository@$d2"
before_v2=$(loaded_counts "$d2")
echo "The resource is edited to $v2; both replicas pull it and swap it in while reconciles keep running:"
set_artifact "$v2"
wait_for "the ReconcilePlugin serving $d2" $load_timeout serving "$d2"
wait_for "both replicas logging 'plugin loaded' for $d2" $load_timeout all_loaded "$d2" "$before_v2"
$kubectl get reconcileplugins -o wide
show_log_lines "plugin loaded" "$d2"
show_events 3

section "RayClusters reconciled by v2: the sample (created before) scaled from 2 to 3 workers, and a new one (created after)"
scale_sample 3
$kubectl apply --server-side -n $work -f - >/dev/null <<'EOF'
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: created-after-v2
spec:
  rayVersion: 2.52.0
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          ports:
          - {name: gcs-server, containerPort: 6379}
          - {name: dashboard, containerPort: 8265}
EOF
wait_for "the sample RayCluster at 3 workers" 120 available_workers raycluster-kuberay 3
wait_for "RayCluster created-after-v2 ready" 120 ready_cluster created-after-v2
$kubectl get rayclusters -n $work

section "A broken version: bytes that are not a component, pushed as an artifact"
printf '\0asm not a component' > "$tmp/broken.wasm"
d3=$(push "$tmp/broken.wasm" broken)
echo "The resource is edited to it: each replica refuses it, and $d2 keeps serving:"
set_artifact "$registry_pod/$repository@$d3"
wait_for "the ReconcilePlugin Degraded with NotAComponent" $load_timeout degraded_with NotAComponent
wait_for "a NotAComponent Event" 60 event_recorded NotAComponent
if ! serving "$d2"; then
    echo "FAILED: the ReconcilePlugin does not report $d2 serving after the broken version" >&2
    false
fi
$kubectl get reconcileplugins -o wide
echo "Degraded: $(condition Degraded reason): $(condition Degraded message)"
show_log_lines "plugin version refused" NotAComponent
show_events 2
echo "The sample is still reconciled, by v2: workers scaled from 3 to 1"
scale_sample 1
wait_for "the sample RayCluster at 1 worker" 120 available_workers raycluster-kuberay 1
$kubectl get rayclusters -n $work

section "A rollback: the resource points back at v1 ($d1), which each replica still holds (no pull, no compile)"
before_rollback=$(loaded_counts "$d1")
set_artifact "$v1"
wait_for "the ReconcilePlugin serving $d1 as requested" $load_timeout as_requested "$d1"
wait_for "both replicas logging 'plugin loaded' for $d1 again" $load_timeout all_loaded "$d1" "$before_rollback"
wait_for "a PluginRolledBack Event" 60 event_recorded PluginRolledBack
$kubectl get reconcileplugins -o wide
show_log_lines "plugin loaded" "$d1"
show_events 3
echo "And v1 reconciles: the sample's workers scaled from 1 to 2"
scale_sample 2
wait_for "the sample RayCluster at 2 workers" 120 available_workers raycluster-kuberay 2
$kubectl get rayclusters -n $work
step="done"

echo
echo "The release keeps running. Try:"
echo "  export KUBECONFIG=$KUBECONFIG"
echo "  $kubectl get pods,lease -n $ns"
echo "  $kubectl get reconcileplugins -o wide"
echo "  $kubectl get events -n $events_ns --field-selector involvedObject.kind=ReconcilePlugin"
echo "  ls $state_dir/logs/pods/   # the operator Pods' logs (JSON lines)"
echo "  $helm uninstall $release --namespace $ns"
