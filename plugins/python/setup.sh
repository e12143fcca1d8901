#!/usr/bin/env bash
# Creates the Python plugin toolchain's virtualenv (.local/componentize-py-venv) with the pinned
# componentize-py, which turns a Python app into a WebAssembly component (it embeds CPython), and does
# nothing when the virtualenv already matches the pin.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$root/.local/componentize-py-venv"
stamp="$venv/.componentize-py.stamp"
python=${PYTHON:-python3}

want="$( (cat "$here/requirements.txt" "$here/setup.sh"; "$python" --version) | sha256sum | cut -d' ' -f1)"
if [ -x "$venv/bin/componentize-py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "componentize-py: up to date in $venv"
  exit 0
fi

echo "componentize-py: installing $(tr '\n' ' ' < "$here/requirements.txt")into $venv"
start=$(date +%s)
rm -f "$stamp"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
echo "$want" > "$stamp"
echo "componentize-py: installed $("$venv/bin/componentize-py" --version) in $(( $(date +%s) - start ))s"
