# kuberay-wasm: the two commands are `make demo` and `make test`; everything else is a building block.
# Every target installs what it needs first, so each works on a fresh machine (see README.md).

SHELL := /bin/bash
.DEFAULT_GOAL := help

CARGO ?= cargo
TESTENV := target/debug/kuberay-testenv

.PHONY: help
help:
	@echo "make demo          start the local control plane and the operator, create a RayCluster with a real Ray head"
	@echo "make test          install what is missing, then check formatting and run every test on a clippy-linted build"
	@echo "make demo-incluster  deploy the operator with its Helm chart into the local cluster, kill the leader, see the takeover,"
	@echo "                     roll the RayCluster plugin out from the local registry, refuse a broken version, roll back"
	@echo "make cluster       start the local Kubernetes control plane in the background (.local/kubeconfig)"
	@echo "make cluster-down  stop the demo operator and the cluster, and remove their state"
	@echo "make plugins       build the plugin components into .local/plugins (and the Python one into .local/python-plugins)"
	@echo "make python-plugin  build the Python example plugin (RayConnection) into .local/python-plugins"
	@echo "make operator      build the operator binary (target/debug/kuberay-wasm)"
	@echo "make apiserver     build the REST/gRPC backend (target/debug/kuberay-apiserver)"
	@echo "make bench         measure a plugin call against the same logic compiled natively"
	@echo "make bench-lifecycle  operator start-up to /readyz and plugin swap latency (release build)"
	@echo "make bench-apiserver  REST get/list of clusters through kuberay-apiserver against direct API calls"
	@echo "make scale         RayCluster/RayJob scale benchmark against the KubeRay operator (SCALE_ARGS=\"--sizes 100\")"
	@echo "make tools         build the control-plane binaries (with cert-manager), the OCI registry, grpcurl, helm and kustomize, the Ray,"
	@echo "                   API-tools and componentize-py virtualenvs and the wasm target; fetch the Gateway API CRDs"
	@echo "                   and the batch schedulers' CRDs"
	@echo "make batch-schedulers  the PodGroup and Queue CRDs of scheduler-plugins and Volcano into .local/batch-scheduler-crds"
	@echo "make registry      build the OCI registry (distribution) the test environment runs into .local/bin"
	@echo "make cosign        build cosign (interoperability tests of plugin signatures) into .local/bin"
	@echo "make cosign-interop  our plugin signatures against the real cosign, both ways (builds cosign; not in make test)"
	@echo "make deploy-tools  build helm and kustomize (tests of the chart and manifests in deploy/) into .local/bin"
	@echo "make hash-table    regenerate the table of KubeRay's Go types behind the spec hashes (kuberay-rules)"
	@echo "make crds          regenerate the CRDs in crds/ from the Rust types of the ray.io/v1 API"

## Prerequisites ------------------------------------------------------------------------------------------

.PHONY: tools control-plane registry cosign cosign-interop ray apitools componentize-py grpcurl kuberay-hash kuberay-operator kuberay-operator-v1.7 gateway-api batch-schedulers wasm-target deploy-tools
tools: control-plane registry ray apitools componentize-py grpcurl kuberay-hash kuberay-operator gateway-api batch-schedulers \
	wasm-target deploy-tools

# kube-apiserver, kube-controller-manager, kubectl and etcd from tests/cluster/go.mod, into .local/bin; cert-manager's
# controllers (tests/cert-manager, the test environment issues the certificates of RayClusters with `tlsOptions`)
# into .local/bin and its CRDs into .local/cert-manager-crds.
control-plane:
	@bash tests/cluster/build.sh
	@bash tests/cert-manager/build.sh

# .local/bin/registry: the CNCF distribution registry from its Go module (tests/registry/go.mod), the test
# environment's OCI registry (TLS, htpasswd) that plugin components are pushed to and pulled from.
registry:
	@bash tests/registry/build.sh

# .local/bin/cosign from its Go module (tests/cosign/go.mod), for host/tests/all/plugin_signatures.rs: signatures
# written by `kuberay-wasm plugin push --sign-key` verify with `cosign verify --key`, and cosign's with ours.
# Not part of `make tools` and `make test`: building cosign takes about 7 minutes on 2 cores. `make test` checks our
# verifier against signatures cosign made (unit-test fixtures); this runs both tools against each other.
cosign:
	@bash tests/cosign/build.sh

cosign-interop: cosign testenv
	$(CARGO) test -p kuberay-wasm --test operator -- --ignored plugin_signatures::our_signatures_verify_with_cosign_and_cosigns_with_ours

# .local/venv with the pinned ray[default,serve] that real Ray head Pods run.
ray:
	@bash tests/ray/setup.sh

# .local/apitools-venv with openapi-spec-validator (checks the API server's OpenAPI document), schemathesis and
# openapi-python-client (generates the Python client of apiserver/clients/python).
apitools:
	@bash tests/apitools/setup.sh

# .local/componentize-py-venv with the pinned componentize-py, which builds the Python plugin (plugins/python).
componentize-py:
	@bash plugins/python/setup.sh

# .local/bin/grpcurl from its Go module, for the API server's tests of gRPC reflection and health.
grpcurl:
	@bash tests/apitools/build-grpcurl.sh

# .local/bin/kuberay-hash, the oracle of KubeRay's spec hashes built from KubeRay's Go module
# (tests/kuberay-hash/go.mod); kuberay-rules' tests compare its hashes with ours.
kuberay-hash:
	@bash tests/kuberay-hash/build.sh

# .local/bin/kuberay-operator: KubeRay's operator from its Go module (tests/kuberay-operator/go.mod), the baseline
# of `make scale` and the other side of the Lease test (host/tests/all/kuberay_lease.rs); and
# .local/bin/kuberay-rayjob-submitter, KubeRay's light-weight RayJob submitter, which the simulated kubelet runs.
kuberay-operator:
	@bash tests/kuberay-operator/build.sh

# .local/kuberay-v1.7.0/: KubeRay's operator v1.7.0 and its CRDs, for `make kuberay-samples-record`. The module proxy
# refuses v1.7.0's source, so it is built from a git clone of ray-project/kuberay named by KUBERAY_SRC.
kuberay-operator-v1.7:
	@bash tests/kuberay-operator/build-v1.7.sh

# .local/gateway-api-crds: the Gateway API CRDs (GatewayClass, Gateway, HTTPRoute) from the Go module
# sigs.k8s.io/gateway-api pinned in tests/gateway-api/fetch.sh; the test environment installs them with the
# ray.io CRDs (RayService's NewClusterWithIncrementalUpgrade).
gateway-api:
	@bash tests/gateway-api/fetch.sh

# .local/batch-scheduler-crds: the PodGroup CRDs of scheduler-plugins (scheduling.x-k8s.io) and Volcano
# (scheduling.volcano.sh, with its Queue) from the Go modules pinned in tests/batch-schedulers/fetch.sh (Volcano's
# generated with controller-gen, built into .local/bin); the test environment installs them with the ray.io CRDs
# (KubeRay's --batch-scheduler integrations, `make kuberay-samples-record RECORD_ARGS="--profile volcano"`).
batch-schedulers:
	@bash tests/batch-schedulers/fetch.sh

# .local/bin/helm and .local/bin/kustomize from their Go modules (tests/deploy-tools/go.mod), for tests/deploy: the
# Helm chart (deploy/helm/kuberay-wasm) and the kustomize manifests (deploy/kustomize).
deploy-tools:
	@bash tests/deploy-tools/build.sh

wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

## Generated files ---------------------------------------------------------------------------------------

.PHONY: crds hash-table
# crds/ray.io_*.yaml from the types in crds/src (committed; a test fails when they are stale).
crds:
	@$(CARGO) run --quiet -p kuberay-crds --features schema --bin crdgen

HASH_TABLE := plugins/rules/src/hash/go_types.rs
# The JSON shape of KubeRay's Go types that kuberay-rules hashes specs with, from KubeRay's Go module
# (committed; regenerate when tests/kuberay-hash/go.mod or v17.go moves).
hash-table: kuberay-hash
	@.local/bin/kuberay-hash table > $(HASH_TABLE).tmp && mv $(HASH_TABLE).tmp $(HASH_TABLE)
	@rustfmt --edition 2024 $(HASH_TABLE)

## The local cluster --------------------------------------------------------------------------------------

.PHONY: testenv cluster cluster-down
testenv:
	@$(CARGO) build --quiet -p kuberay-testenv --bin kuberay-testenv

cluster: control-plane registry ray gateway-api batch-schedulers testenv
	@$(TESTENV) up

cluster-down: testenv
	@bash scripts/apiserver.sh stop
	@bash scripts/operator.sh stop
	@$(TESTENV) down

## The operator and its plugins ---------------------------------------------------------------------------

GUEST_TARGET := target/guest
PLUGINS := kuberay-plugin-raycluster kuberay-plugin-rayjob kuberay-plugin-raycronjob kuberay-plugin-rayservice

.PHONY: plugins operator apiserver bench bench-lifecycle bench-apiserver
# `cargo build --target wasm32-wasip2` with the workspace's guest profile (the release code without symbol
# names; see Cargo.toml), into the target directory the tests build guests in.
GUEST_OUT := $(GUEST_TARGET)/wasm32-wasip2/guest
plugins: wasm-target python-plugin
	CARGO_TARGET_DIR=$(GUEST_TARGET) $(CARGO) build --profile guest --target wasm32-wasip2 $(addprefix -p ,$(PLUGINS))
	@mkdir -p .local/plugins
	@cp $(GUEST_OUT)/kuberay_plugin_raycluster.wasm .local/plugins/raycluster.wasm
	@cp $(GUEST_OUT)/kuberay_plugin_rayjob.wasm .local/plugins/rayjob.wasm
	@cp $(GUEST_OUT)/kuberay_plugin_raycronjob.wasm .local/plugins/raycronjob.wasm
	@cp $(GUEST_OUT)/kuberay_plugin_rayservice.wasm .local/plugins/rayservice.wasm
	@echo "plugins: $$(ls .local/plugins)"

# The Python example plugin (plugins/python/rayconnection, RayConnection) as a component, built with
# componentize-py when its sources, the WIT or the toolchain's pin changed; in a directory of its own, since the
# built-in policy has no entry for it (policy-entry.yaml next to it is the entry to add). Its unit tests run on
# CPython.
PYTHON_PLUGIN := .local/python-plugins/rayconnection.wasm
PYTHON_PLUGIN_DIR := plugins/python/rayconnection
.PHONY: python-plugin python-plugin-check
python-plugin: $(PYTHON_PLUGIN)
$(PYTHON_PLUGIN): $(PYTHON_PLUGIN_DIR)/app.py $(PYTHON_PLUGIN_DIR)/connection.py $(PYTHON_PLUGIN_DIR)/build.sh \
		wit/plugin.wit plugins/python/requirements.txt | componentize-py
	@bash $(PYTHON_PLUGIN_DIR)/build.sh $@

python-plugin-check: componentize-py
	PYTHONDONTWRITEBYTECODE=1 .local/componentize-py-venv/bin/python -m unittest discover -s $(PYTHON_PLUGIN_DIR)

operator:
	$(CARGO) build -p kuberay-wasm --bin kuberay-wasm

apiserver:
	$(CARGO) build -p kuberay-apiserver --bin kuberay-apiserver

bench: wasm-target
	$(CARGO) bench -p kuberay-wasm --bench plugin_call

# Operator start-up to /readyz and plugin swap to serving, on the release binary against a private control
# plane (the test environment's supervisor is the debug build of `make testenv`).
bench-lifecycle: wasm-target control-plane gateway-api batch-schedulers testenv
	KUBERAY_TESTENV_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target))/debug/kuberay-testenv \
		$(CARGO) bench -p kuberay-wasm --bench lifecycle

# REST reads (get and list of clusters) through kuberay-apiserver against the same reads made directly on
# the Kubernetes API server; starts a private control plane unless `make cluster` runs.
bench-apiserver: control-plane batch-schedulers testenv
	$(CARGO) bench -p kuberay-apiserver --bench rest

# The same RayCluster and RayJob workload against the release build of kuberay-wasm and KubeRay's operator, one
# after the other on a private control plane with the API server's audit log; tables on stdout, raw numbers in
# .local/scale/results-<time>.json. Flags through SCALE_ARGS (e.g. SCALE_ARGS="--sizes 100 --rayjobs 20").
# Not part of `make test`.
SCALE_ARGS ?=
.PHONY: scale
scale: control-plane kuberay-operator plugins batch-schedulers testenv
	$(CARGO) build --release -p kuberay-wasm --bin kuberay-wasm
	$(CARGO) build -p kuberay-scale
	$${CARGO_TARGET_DIR:-target}/debug/kuberay-scale $(SCALE_ARGS)

# The objects KubeRay's operator v1.7.0 creates for each of KubeRay's samples, on a private control plane with fake
# Ray heads, into tests/fixtures/kuberay-objects/ (committed; `host/tests/all/kuberay_samples.rs` compares ours
# with them). Needs KUBERAY_SRC the first time (see kuberay-operator-v1.7). Flags through RECORD_ARGS (e.g.
# RECORD_ARGS="--only ray-job.sample"). Not part of `make test`.
RECORD_ARGS ?=
.PHONY: kuberay-samples-record
kuberay-samples-record: control-plane kuberay-operator-v1.7 gateway-api batch-schedulers testenv
	$(CARGO) build -p kuberay-samples-record
	$${CARGO_TARGET_DIR:-target}/debug/kuberay-samples-record $(RECORD_ARGS)

## The demo -----------------------------------------------------------------------------------------------

.PHONY: demo demo-incluster
demo: cluster plugins operator apiserver
	@bash scripts/demo.sh

# The operator deployed with its Helm chart (two replicas, leader election) and run in its Pods by the simulated
# kubelet (the chart's image mapped to target/debug/kuberay-wasm), the RayCluster plugin served from the local
# registry by a ReconcilePlugin resource; kills the leader and shows the takeover, then rolls a new plugin version
# out, has a broken one refused and rolls back.
demo-incluster: cluster plugins operator deploy-tools
	@bash scripts/demo-incluster.sh

## Checks and tests ---------------------------------------------------------------------------------------

.PHONY: fmt-check lint test test-fast
fmt-check:
	$(CARGO) fmt --all -- --check

# Plugins and everything they depend on must also pass clippy for the target they run on.
lint: wasm-target
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --target wasm32-wasip2 -p kuberay-core -p kuberay-crds -p kuberay-plugin-sdk -p kuberay-plugin-raycluster -p kuberay-plugin-rayjob -p kuberay-plugin-raycronjob -p kuberay-plugin-rayservice -p kuberay-rules -p kuberay-test-plugin-chaos -- -D warnings

# `make test` compiles the workspace's own crates with clippy-driver in place of rustc (RUSTC_WORKSPACE_WRAPPER),
# with `-D warnings` (CLIPPY_ARGS, as `cargo clippy -- -D warnings` passes it): the build is the lint, and the
# dependencies are compiled once instead of once more for `cargo clippy`'s check build (cold, on 2 cores: 32.7 min
# against 16.6 min of clippy plus 20.4 min of build before, 2026-12-07). The nested guest build of tests/plugin-artifacts inherits both, so the plugins, the SDK, the rules,
# kuberay-core and kuberay-crds are linted for wasm32-wasip2 as `make lint` does. The same variables for the build
# and the test run, or cargo would compile the workspace again.
# The test binaries start their own control plane (or use a running `make cluster`); the supervisor binary they
# launch is built first. The Python plugin is built first too: its end-to-end test (host/tests/all/python_plugin.rs)
# loads it. Afterwards nothing may be left behind but a running `make cluster`.
LINTED_BUILD := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
test: tools fmt-check python-plugin-check python-plugin
	$(LINTED_BUILD) $(CARGO) build --workspace --all-targets
	$(LINTED_BUILD) $(CARGO) test --workspace
	$(TESTENV) leftovers --wait 60

# What needs no cluster, no root and no Ray: formatting, clippy, every crate's unit tests, the sandbox against the
# chaos component, the plugins' tests on the SDK's in-memory FakeHost, the CRDs against their generator and
# KubeRay's samples, the Python plugin's unit tests. A subset of `make test` for the edit loop, not a replacement.
test-fast: kuberay-hash componentize-py fmt-check lint python-plugin-check
	$(CARGO) test --workspace --lib --bins
	$(CARGO) test -p kuberay-wasm --test sandbox
	$(CARGO) test -p kuberay-plugin-raycluster -p kuberay-plugin-rayjob -p kuberay-plugin-rayservice -p kuberay-plugin-raycronjob --tests
	$(CARGO) test -p kuberay-crds --test generated --test fixtures
