#!/usr/bin/env python3
"""Benchmarks `wctmon dump` next to `gcore` in the same run, interleaved: how long each takes,
how big the core is, and how long the target was held: a thread of the target ticks every
millisecond and keeps the longest gap between its ticks, which is how long it was stopped (gcore
stops every thread for the whole dump; wctmon holds each one, in turn, for its registers).
Two targets: a process of 1,000 threads blocked on a lock, and one with 1 GiB of resident
anonymous memory. Prints medians.

Usage: scripts/bench/dump.py [--build build/default] [--runs 5]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

# The target: THREADS threads blocked on a lock, MIB MiB of anonymous memory touched, and a
# ticker thread; "gap" on stdin prints the longest gap between ticks (ms) since the last "gap".
TARGET = r"""
import sys, threading, time
threads, mib = int(sys.argv[1]), int(sys.argv[2])
memory = bytearray(mib << 20)
for i in range(0, len(memory), 4096):
    memory[i] = 1
lock = threading.Lock()
lock.acquire()
for _ in range(threads):
    threading.Thread(target=lock.acquire, daemon=True).start()
longest = 0.0
def tick():
    global longest
    last = time.monotonic()
    while True:
        time.sleep(0.001)
        now = time.monotonic()
        longest = max(longest, now - last)
        last = now
threading.Thread(target=tick, daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    print(f"{longest * 1000:.1f}", flush=True)
    longest = 0.0
"""


def run_dump(argv, target, out):
    """Runs one dump; its wall time (ms), the core's size (bytes) and the target's longest stop."""
    target.stdin.write("gap\n")
    target.stdin.flush()
    target.stdout.readline()  # the gap before: reset
    start = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = (time.perf_counter() - start) * 1000
    if not os.path.exists(out):
        sys.exit(f"{argv[0]} wrote no core: exit {r.returncode}: {r.stderr}")
    size = os.path.getsize(out)
    os.remove(out)
    if os.path.exists(out + ".json"):
        os.remove(out + ".json")
    time.sleep(0.05)  # a few ticks after the dump, so that its gap is seen
    target.stdin.write("gap\n")
    target.stdin.flush()
    return took, size, float(target.stdout.readline())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    wctmon = os.path.join(args.build, "service/wctmon")
    print(f"{'target':>16} {'tool':>7} {'ms':>8} {'MiB':>8} {'held ms':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        for label, threads, mib in (("1,000 threads", 1000, 8), ("1 GiB anonymous", 4, 1024)):
            target = subprocess.Popen([sys.executable, "-c", TARGET, str(threads), str(mib)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                if target.stdout.readline().strip() != "ready":
                    sys.exit("the target did not start")
                pid = str(target.pid)
                core = os.path.join(scratch, "core")
                tools = {
                    "wctmon": ([wctmon, "dump", "--pid", pid, "--out", core], core),
                    "gcore": (["gcore", "-o", core, pid], f"{core}.{pid}"),
                }
                samples = {name: [] for name in tools}
                for _ in range(args.runs):
                    for name, (argv, out) in tools.items():
                        samples[name].append(run_dump(argv, target, out))
                for name, runs in samples.items():
                    took = statistics.median(r[0] for r in runs)
                    size = statistics.median(r[1] for r in runs) / (1 << 20)
                    held = statistics.median(r[2] for r in runs)
                    print(f"{label:>16} {name:>7} {took:8.0f} {size:8.1f} {held:8.1f}")
            finally:
                target.kill()
                target.wait()


if __name__ == "__main__":
    main()
