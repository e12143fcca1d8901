#!/usr/bin/env bash
# Builds the RayConnection plugin component from app.py and connection.py with the pinned componentize-py
# (plugins/python/setup.sh, `make componentize-py`): `build.sh [OUTPUT]`, by default
# .local/python-plugins/rayconnection.wasm. Written aside and renamed in, so an operator watching the
# directory never loads half a file.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/.local/python-plugins/rayconnection.wasm}
componentize_py="$root/.local/componentize-py-venv/bin/componentize-py"
if [ ! -x "$componentize_py" ]; then
  echo "rayconnection: $componentize_py is missing; run \`make componentize-py\` (plugins/python/setup.sh)" >&2
  exit 1
fi

# Only the app's own directory is on the component's Python path: no virtualenv's site-packages.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp "$here/app.py" "$here/connection.py" "$src/"
mkdir -p "$(dirname "$out")"
partial="$(dirname "$out")/.$(basename "$out").partial"
start=$(date +%s)
env -u VIRTUAL_ENV PYTHONDONTWRITEBYTECODE=1 "$componentize_py" --quiet -d "$root/wit" -w reconcile-plugin \
  componentize --python-path "$src" app -o "$partial"
mv "$partial" "$out"
echo "rayconnection: $out ($(stat -c %s "$out") bytes) in $(( $(date +%s) - start ))s"
