#!/usr/bin/env python3
"""Where the time of a plugin call goes: a `perf record` of `make bench` summarised by function, with the
plugin's own functions named.

wasmtime maps a precompiled plugin from its `.cwasm` file, so perf attributes the plugin's samples to that
file and cannot name them; with KUBERAY_WASM_PERFMAP=1 the operator (and the bench) writes
/tmp/perf-<pid>.map, whose entries say `wasm[0]::function[N]`. This script resolves each sample's address in
that map and N in the name section of the component's core module, so build the component with names (the
`release` profile keeps them; `guest` strips them):

    cargo build --release --target wasm32-wasip2 --target-dir target/guest -p kuberay-plugin-raycluster
    COMPONENT=target/guest/wasm32-wasip2/release/kuberay_plugin_raycluster.wasm
    KUBERAY_WASM_PERFMAP=1 KUBERAY_BENCH_BASELINE=$COMPONENT \\
        perf record -F 4000 -o /tmp/perf.data target/release/deps/plugin_call-<hash>
    perf script -i /tmp/perf.data -F tid,time,ip,sym,dso > /tmp/perf.txt
    scripts/perf-wasm-report.py /tmp/perf.txt /tmp/perf-<pid>.map $COMPONENT

It reports the bench thread's samples while the baseline component (the one passed in
KUBERAY_BENCH_BASELINE, measured last) was being called: by file (plugin code, the bench binary with
wasmtime and the in-memory host, libc) and by function.
"""

import bisect
import collections
import re
import sys

SAMPLE = re.compile(r"\s*(\d+)\s+([\d.]+):\s+([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$")


def leb128(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def function_names(component):
    """Function index -> name, from the `name` section of the component's first core module."""
    data = open(component, "rb").read()
    start = data.find(b"\x00asm\x01\x00\x00\x00")
    if start < 0:
        sys.exit(f"{component}: no core module found")
    at, names = start + 8, {}
    while at < len(data):
        section = data[at]
        size, body = leb128(data, at + 1)
        end = body + size
        if section == 0:
            length, name_at = leb128(data, body)
            if data[name_at : name_at + length] == b"name":
                sub = name_at + length
                while sub < end:
                    kind = data[sub]
                    sub_size, sub_body = leb128(data, sub + 1)
                    if kind == 1:
                        count, entry = leb128(data, sub_body)
                        for _ in range(count):
                            index, entry = leb128(data, entry)
                            length, entry = leb128(data, entry)
                            names[index] = data[entry : entry + length].decode("utf-8", "replace")
                            entry += length
                    sub = sub_body + sub_size
                return names
        at = end
    sys.exit(f"{component}: no name section (build it with the release profile)")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    perf_text, perf_map, component = sys.argv[1:]
    names = function_names(component)
    entries = []
    for line in open(perf_map):
        address, size, name = line.split(" ", 2)
        entries.append((int(address, 16), int(size, 16), name.strip()))
    entries.sort()
    starts = [e[0] for e in entries]

    samples = []
    for line in open(perf_text):
        m = SAMPLE.match(line)
        if m:
            samples.append((int(m[1]), float(m[2]), int(m[3], 16), m[4].strip(), m[5]))
    cwasm_files = []
    for sample in samples:
        if sample[4].endswith(".cwasm") and sample[4] not in cwasm_files:
            cwasm_files.append(sample[4])
    if not cwasm_files:
        sys.exit("no samples in plugin code")
    baseline = [s for s in samples if s[4] == cwasm_files[-1]]
    thread, first, last = baseline[0][0], baseline[0][1], baseline[-1][1]
    window = [s for s in samples if s[0] == thread and first <= s[1] <= last]

    def plugin_function(address):
        k = bisect.bisect_right(starts, address) - 1
        if k >= 0 and entries[k][0] <= address < entries[k][0] + entries[k][1]:
            index = re.search(r"function\[(\d+)\]", entries[k][2])
            if index:
                return "plugin: " + names.get(int(index[1]), entries[k][2])
            return "plugin: " + entries[k][2]
        return "plugin: ?"

    by_file = collections.Counter()
    by_function = collections.Counter()
    for _, _, address, symbol, dso in window:
        in_plugin = dso.endswith(".cwasm")
        by_file["plugin code" if in_plugin else dso.rsplit("/", 1)[-1]] += 1
        name = plugin_function(address) if in_plugin else symbol
        by_function[re.sub(r"::h[0-9a-f]{16}$", "", name)[:150]] += 1
    total = len(window)
    print(f"{total} samples of thread {thread} in {last - first:.2f} s of calls to {cwasm_files[-1]}")
    for name, count in by_file.most_common(8):
        print(f"{100 * count / total:5.1f}%  {name}")
    print()
    for name, count in by_function.most_common(50):
        print(f"{100 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
