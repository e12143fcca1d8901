#!/usr/bin/env python3
"""Copies KubeRay's sample manifests into tests/fixtures/kuberay-samples/ as data.

Every YAML document is loaded and dumped again, which drops all comments and keeps the data. Run it with the
project's virtualenv (PyYAML): .local/venv/bin/python scripts/import-kuberay-samples.py [KUBERAY_GIT_DIR] [REV]
"""

import pathlib
import subprocess
import sys

import yaml

SAMPLES = "ray-operator/config/samples/"
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/kuberay-samples"


class Dumper(yaml.SafeDumper):
    pass


def represent_str(dumper, value):
    # Multi-line strings (serveConfigV2, scripts in ConfigMaps) stay readable as literal blocks.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


Dumper.add_representer(str, represent_str)


def main():
    git_dir = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/ray-project+kuberay/repo"
    rev = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    names = subprocess.run(
        ["git", "-C", git_dir, "ls-tree", "-r", "--name-only", rev, SAMPLES],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    count = 0
    for name in names:
        if not name.endswith((".yaml", ".yml")):
            continue
        text = subprocess.run(
            ["git", "-C", git_dir, "show", f"{rev}:{name}"], check=True, capture_output=True, text=True
        ).stdout
        docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
        target = OUT / name[len(SAMPLES):]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            yaml.dump_all(docs, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1_000_000,
                          explicit_start=len(docs) > 1)
        )
        count += 1
    print(f"{count} files written to {OUT}")


if __name__ == "__main__":
    main()
