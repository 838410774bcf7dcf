#!/usr/bin/env python3
"""Benchmarks `wctmon analyze --core`: how long the analysis of a core takes, next to `analyze
--pid` of the live process the core was taken of. Two cores, written once each by gcore: of the
fixture with 1,000 idle threads and an ABBA deadlock (`wctmon-fixture idle-abba 1000`), and of a
small one (`wctmon-fixture mutex-abba`: 4 threads). Each command is run RUNS times, interleaved,
after one untimed run that warms the page cache; prints medians (ms) and the cores' sizes.

Usage: scripts/bench/analyze_core.py [--build build/default] [--runs 11]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def start_fixture(fixture, args):
    proc = subprocess.Popen([fixture, *args], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        sys.exit(f"the fixture {' '.join(args)} did not start")
    return proc, json.loads(line)["pid"]


def timed(argv, expect=3):
    start = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = (time.perf_counter() - start) * 1000
    if r.returncode != expect:
        sys.exit(f"{' '.join(argv)}: exit {r.returncode} (expected {expect}): {r.stderr}")
    return took


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    wctmon = os.path.join(args.build, "service/wctmon")
    fixture = os.path.join(args.build, "tests/wctmon-fixture")
    print(f"{'target':>22} {'core MiB':>9} {'--core ms':>10} {'--core --json':>14} {'--pid ms':>9}")
    with tempfile.TemporaryDirectory() as scratch:
        for label, fixture_args in (("1,000 threads + ABBA", ["idle-abba", "1000"]),
                                    ("4 threads, mutex ABBA", ["mutex-abba"])):
            proc, pid = start_fixture(fixture, fixture_args)
            try:
                prefix = os.path.join(scratch, "core")
                subprocess.run(["gcore", "-o", prefix, str(pid)], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                core = f"{prefix}.{pid}"
                commands = {
                    "core": [wctmon, "analyze", "--core", core],
                    "json": [wctmon, "analyze", "--core", core, "--json"],
                    "pid": [wctmon, "analyze", "--pid", str(pid)],
                }
                for argv in commands.values():
                    timed(argv)
                samples = {name: [] for name in commands}
                for _ in range(args.runs):
                    for name, argv in commands.items():
                        samples[name].append(timed(argv))
                size = os.path.getsize(core) / (1 << 20)
                median = {name: statistics.median(s) for name, s in samples.items()}
                print(f"{label:>22} {size:9.0f} {median['core']:10.1f} {median['json']:14.1f} "
                      f"{median['pid']:9.1f}")
                os.remove(core)
            finally:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
