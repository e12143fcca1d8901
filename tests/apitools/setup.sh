#!/usr/bin/env bash
# Creates the API tools' Python virtualenv (.local/apitools-venv): openapi-spec-validator, which checks the
# API server's OpenAPI document, schemathesis, which fuzzes the running server against it, and
# openapi-python-client, which generates the Python client (apiserver/clients/python). Does nothing when the
# virtualenv already matches the pins.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.local/apitools-venv"
stamp="$venv/.apitools.stamp"
python=${PYTHON:-python3}

want="$( (cat "$here/requirements.txt" "$here/constraints.txt" "$here/setup.sh"; "$python" --version) | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/openapi-spec-validator" ] && [ -x "$venv/bin/schemathesis" ] \
  && [ -x "$venv/bin/openapi-python-client" ] && [ -f "$stamp" ] \
  && [ "$(cat "$stamp")" = "$want" ]; then
  echo "apitools: up to date in $venv"
  exit 0
fi

echo "apitools: installing $(tr '\n' ' ' < "$here/requirements.txt")into $venv"
start=$(date +%s)
rm -f "$stamp"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" -c "$here/constraints.txt"
echo "$want" > "$stamp"
echo "apitools: installed in $(( $(date +%s) - start ))s"
