# kuberay-wasm: the two commands are `make demo` and `make test`; everything else is a building block.
# Every target installs what it needs first, so each works on a fresh machine (see README.md).

SHELL := /bin/bash
.DEFAULT_GOAL := help

CARGO ?= cargo
TESTENV := target/debug/kuberay-testenv

.PHONY: help
help:
	@echo "make demo          start the local control plane (and, with later issues, the operator) and show how to use it"
	@echo "make test          install what is missing, then run formatting, lint and every test"
	@echo "make cluster       start the local Kubernetes control plane in the background (.local/kubeconfig)"
	@echo "make cluster-down  stop it and remove its state"
	@echo "make tools         build the control-plane binaries, the Ray virtualenv and the wasm target"
	@echo "make crds          regenerate the CRDs in crds/ from the Rust types of the ray.io/v1 API"

## Prerequisites ------------------------------------------------------------------------------------------

.PHONY: tools control-plane ray wasm-target
tools: control-plane ray wasm-target

# kube-apiserver, kube-controller-manager, kubectl and etcd from tests/cluster/go.mod, into .local/bin.
control-plane:
	@bash tests/cluster/build.sh

# .local/venv with the pinned ray[default,serve] that real Ray head Pods run.
ray:
	@bash tests/ray/setup.sh

wasm-target:
	@rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2

## Generated files ---------------------------------------------------------------------------------------

.PHONY: crds
# crds/ray.io_*.yaml from the types in crds/src (committed; a test fails when they are stale).
crds:
	@$(CARGO) run --quiet -p kuberay-crds --features schema --bin crdgen

## The local cluster --------------------------------------------------------------------------------------

.PHONY: testenv cluster cluster-down
testenv:
	@$(CARGO) build --quiet -p kuberay-testenv --bin kuberay-testenv

cluster: control-plane ray testenv
	@$(TESTENV) up

cluster-down: testenv
	@$(TESTENV) down

## The demo -----------------------------------------------------------------------------------------------

.PHONY: demo
demo: cluster
	@bash scripts/demo.sh

## Checks and tests ---------------------------------------------------------------------------------------

.PHONY: fmt-check lint test
fmt-check:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# kuberay-crds must keep building for the plugins' target with its default features. The test binaries start
# their own control plane (or use a running `make cluster`); the supervisor binary they launch is built first.
# Afterwards nothing may be left behind but a running `make cluster`.
test: tools fmt-check lint
	$(CARGO) check -p kuberay-crds --target wasm32-wasip2
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace
	$(TESTENV) leftovers --wait 60
