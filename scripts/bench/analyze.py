#!/usr/bin/env python3
"""Benchmarks `wctmon analyze` on a process with N threads in condition-variable waits plus one
ABBA deadlock, next to the /proc floor (a C program that only opens and reads stat + syscall of
every thread) and to `gdb -batch -ex "thread apply all bt"`, in the same run. Also measures how
long --capture stops each captured thread. Prints medians."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time


def start_fixture(fixture, threads):
    proc = subprocess.Popen([fixture, "idle-abba", str(threads)], stdout=subprocess.PIPE,
                            start_new_session=True)
    line = proc.stdout.readline()
    if not line:
        sys.exit("fixture did not start")
    return proc, json.loads(line)["pid"]


def wall_ms(argv, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def interleaved(commands, runs):
    """Runs the commands in turn, `runs` rounds, so that noise hits all of them alike."""
    samples = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            samples[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--threads", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--gdb-runs", type=int, default=3)
    args = parser.parse_args()
    wctmon = os.path.join(args.build, "service/wctmon")
    floor = os.path.join(args.build, "scripts/bench/proc_floor")
    fixture = os.path.join(args.build, "tests/wctmon-fixture")

    # Captures first: tearing down a process of 10,000 threads keeps the kernel busy for a while.
    proc, pid = start_fixture(fixture, 100)
    try:
        stops = []
        for _ in range(args.runs):
            out = subprocess.run([wctmon, "analyze", "--pid", str(pid), "--capture", "--json"],
                                 capture_output=True, check=False)
            for c in json.loads(out.stdout)["captures"]:
                if c["captured"]:
                    stops.append(int(c["stop_time_ns"]) / 1000)
        print(f"capture: {len(stops)} thread stops, median {statistics.median(stops):.1f} us, "
              f"max {max(stops):.1f} us per captured thread")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    print(f"{'threads':>8} {'floor ms':>9} {'wctmon ms':>10} {'ratio':>6} {'us/thread':>10} "
          f"{'gdb ms':>9} {'gdb/wctmon':>10}")
    for n in args.threads:
        proc, pid = start_fixture(fixture, n)
        try:
            analyze = [wctmon, "analyze", "--pid", str(pid), "--json"]
            check = subprocess.run(analyze, capture_output=True, check=False)
            if check.returncode != 3:
                sys.exit(f"expected the deadlock (exit 3), got {check.returncode}: {check.stderr}")
            m = interleaved({"floor": [floor, str(pid)], "wctmon": analyze}, args.runs)
            gdb = wall_ms(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                          args.gdb_runs)
            print(f"{n:>8} {m['floor']:>9.1f} {m['wctmon']:>10.1f} {m['wctmon'] / m['floor']:>6.2f} "
                  f"{m['wctmon'] * 1000 / (n + 3):>10.2f} {gdb:>9.0f} {gdb / m['wctmon']:>10.0f}")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            time.sleep(1)  # let the kernel finish tearing the threads down


if __name__ == "__main__":
    main()
