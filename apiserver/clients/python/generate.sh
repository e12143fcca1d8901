#!/usr/bin/env bash
# Generates the Python client of kuberay-apiserver from its OpenAPI document, with the pinned
# openapi-python-client of .local/apitools-venv (`make apitools`): an installable project (setup.py) whose
# package `kuberay_apiserver_client` has a function per call (sync, async, detailed) and a class per message.
#
#   curl -s http://127.0.0.1:8888/openapi.json > openapi.json
#   bash apiserver/clients/python/generate.sh openapi.json out/kuberay-apiserver-client
#   pip install out/kuberay-apiserver-client
#
# The v1 API (clusters, compute templates, jobs, job submissions, services) comes out whole; of the
# Kubernetes pass-through, operations whose body may be YAML or raw bytes are left out (use the Kubernetes
# client for those).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 OPENAPI_JSON OUTPUT_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
generator="$root/.local/apitools-venv/bin/openapi-python-client"
if [ ! -x "$generator" ]; then
  echo "$generator is missing: run \`make apitools\`" >&2
  exit 1
fi
# The generator formats with ruff when it finds it; the venv has it.
PATH="$root/.local/apitools-venv/bin:$PATH" "$generator" generate --path "$1" --output-path "$2" \
  --config "$here/config.yaml" --meta setup --overwrite
