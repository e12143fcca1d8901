#!/usr/bin/env bash
# Creates the project's Python virtualenv (.local/venv) with the pinned Ray that real Ray head Pods run, and
# does nothing when it already matches the pins.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.local/venv"
stamp="$venv/.ray.stamp"
python=${PYTHON:-python3}

want="$( (cat "$here/requirements.txt" "$here/constraints.txt" "$here/setup.sh"; "$python" --version) | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/ray" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "ray: up to date in $venv"
  exit 0
fi

echo "ray: installing $(cat "$here/requirements.txt") into $venv"
start=$(date +%s)
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" -c "$here/constraints.txt"
echo "$want" > "$stamp"
echo "ray: installed in $(( $(date +%s) - start ))s"
