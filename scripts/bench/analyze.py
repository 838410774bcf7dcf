#!/usr/bin/env python3
"""Benchmarks `wctmon analyze` on a process with N threads in condition-variable waits plus one
ABBA deadlock, next to the /proc floor (a C program that only opens and reads stat + syscall of
every thread) and to `gdb -batch -ex "thread apply all bt"`, in the same run. Also measures how
long --capture stops each captured thread, p50/p99, on an idle machine and with every core kept
busy. With --baseline BUILD, another build (an earlier version) is measured in the same rounds,
interleaved, so that the two are compared under the same noise. Prints medians."""
import argparse
import contextlib
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


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


@contextlib.contextmanager
def cpu_load():
    """Keeps every core busy with a spinning process, so that a stopped thread waits for a CPU."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def capture_stops(builds, fixture, runs):
    """Per build: the stop times (us) of every captured thread over `runs` captures, interleaved."""
    proc, pid = start_fixture(fixture, 100)
    stops = {name: [] for name in builds}
    try:
        for _ in range(runs):
            for name, wctmon in builds.items():
                out = subprocess.run([wctmon, "analyze", "--pid", str(pid), "--capture", "--json"],
                                     capture_output=True, check=False)
                for c in json.loads(out.stdout)["captures"]:
                    if c["captured"] and c.get("method", "CAPTURE_METHOD_STOPPED") == \
                            "CAPTURE_METHOD_STOPPED":
                        stops[name].append(int(c["stop_time_ns"]) / 1000)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return stops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--baseline", help="build directory of an earlier version to compare")
    parser.add_argument("--threads", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--capture-runs", type=int, default=100)
    parser.add_argument("--gdb-runs", type=int, default=3)
    args = parser.parse_args()
    builds = {"current": args.build}
    if args.baseline:
        builds["baseline"] = args.baseline
    wctmon = {name: os.path.join(b, "service/wctmon") for name, b in builds.items()}
    floor = os.path.join(args.build, "scripts/bench/proc_floor")
    fixture = os.path.join(args.build, "tests/wctmon-fixture")

    # Captures first: tearing down a process of 10,000 threads keeps the kernel busy for a while.
    for label, load in (("idle", contextlib.nullcontext()), ("loaded", cpu_load())):
        with load:
            stops = capture_stops(wctmon, fixture, args.capture_runs)
        for name, s in stops.items():
            print(f"capture stop, {label:>6}, {name:>8}: {len(s)} stops, p50 "
                  f"{statistics.median(s):.1f} us, p99 {percentile(s, 99):.1f} us, "
                  f"max {max(s):.1f} us")

    print(f"{'threads':>8} {'build':>8} {'floor ms':>9} {'wctmon ms':>10} {'ratio':>6} "
          f"{'us/thread':>10} {'gdb ms':>9} {'gdb/wctmon':>10}")
    for n in args.threads:
        proc, pid = start_fixture(fixture, n)
        try:
            commands = {"floor": [floor, str(pid)]}
            for name, w in wctmon.items():
                commands[name] = [w, "analyze", "--pid", str(pid), "--json"]
                check = subprocess.run(commands[name], capture_output=True, check=False)
                if check.returncode != 3:
                    sys.exit(f"{name}: expected the deadlock (exit 3), got {check.returncode}: "
                             f"{check.stderr}")
            m = interleaved(commands, args.runs)
            gdb = wall_ms(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                          args.gdb_runs) if args.gdb_runs > 0 else float("nan")
            for name in wctmon:
                print(f"{n:>8} {name:>8} {m['floor']:>9.1f} {m[name]:>10.1f} "
                      f"{m[name] / m['floor']:>6.2f} {m[name] * 1000 / (n + 3):>10.2f} "
                      f"{gdb:>9.0f} {gdb / m[name]:>10.0f}")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            time.sleep(1)  # let the kernel finish tearing the threads down


if __name__ == "__main__":
    main()
