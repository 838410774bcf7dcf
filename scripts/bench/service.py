#!/usr/bin/env python3
"""Benchmarks the monitoring service (wctmond):

1. detection latency: from the moment a deadlock forms in a watched process to the incident being
   in the store (polled in SQLite every 2 ms), over --runs deadlocks; p50/p99 against the goal
   of one interval + 100 ms;
2. steady state: --processes idle processes of --threads threads each, sampled every interval:
   CPU % of one core and RSS of the service over --seconds, median of --rounds.

With --baseline BUILD, an earlier version is measured the same way in the same run (the same
fixture processes for the steady state, one service after the other), so that the figures
compare on one machine at one time.

Per-thread sweep cost next to a full re-read is measured in-process by wctmon-phases-bench;
status reads while captures and commits run, by wctmon-status-bench."""
import argparse
import json
import random
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def accepts(wctmon, config):
    """Whether this build takes `config` (earlier ones refuse keys they do not know)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(json.dumps(config))
        f.flush()
        return subprocess.run([wctmon, "validate-config", f.name], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0


def start_service(wctmon, state, interval_ms, tag, extra="", prefix=()):
    config = os.path.join(state, "wctmon.json")
    # Its own API socket and no metrics endpoint: the default addresses are for one service per
    # host.
    own = {}
    if accepts(wctmon, {"api": {"enabled": False}}):
        own["api"] = {"listen": ["unix:" + os.path.join(state, "api.sock")]}
    if accepts(wctmon, {"metrics": {"enabled": False}}):
        own["metrics"] = {"enabled": False}
    with open(config, "w") as f:
        f.write(json.dumps({**own,
            "state_dir": state,
            "sampling": {"interval_ms": interval_ms},
            "alerts": {"sink": "none"},
            "log": {"level": "warn", "console": False},
            "targets": [{"name": "bench", "cmdline": tag}],
        }))
    service = subprocess.Popen([*prefix, wctmon, "run", "--config", config], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while not os.path.exists(os.path.join(state, "incidents.db")) and time.time() < deadline:
        time.sleep(0.05)
    return service


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def latency(args, wctmon, fixture, label):
    with tempfile.TemporaryDirectory() as state:
        tag = "--tag=latency-" + os.path.basename(state)
        service = start_service(wctmon, state, args.interval, tag)
        db = sqlite3.connect(f"file:{os.path.join(state, 'incidents.db')}?mode=ro", uri=True)
        samples = []
        try:
            for _ in range(args.runs):
                fx = subprocess.Popen([fixture, "abba-on-demand", "", tag], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, start_new_session=True)
                pid = json.loads(fx.stdout.readline())["pid"]
                # Discovered and sampled at least once, then a random moment within the interval:
                # the deadlock forms at any phase of the sampling timer.
                time.sleep(args.interval / 1000 * (1.5 + random.random()) + 0.2)
                fx.stdin.write(b"go\n")
                fx.stdin.flush()
                formed = int(fx.stdout.readline()) / 1e9
                while True:
                    row = db.execute("SELECT 1 FROM incidents WHERE pid = ? AND kind = 'deadlock'",
                                     (pid,)).fetchone()
                    if row:
                        samples.append((time.time() - formed) * 1000)
                        break
                    if time.time() - formed > 10:
                        sys.exit("no incident within 10 s")
                    time.sleep(0.002)
                os.killpg(fx.pid, signal.SIGKILL)
                fx.wait()
        finally:
            stop(service)
        samples.sort()
        p99 = samples[min(len(samples) - 1, int(round(0.99 * (len(samples) - 1))))]
        print(f"{label}detection latency over {len(samples)} deadlocks at {args.interval} ms interval: "
              f"p50 {statistics.median(samples):.0f} ms, p99 {p99:.0f} ms, max {max(samples):.0f} ms "
              f"(goal p99 <= {args.interval + 100} ms)")


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class RssPeak:
    """The highest VmRSS of process `pid` from now until stop(), sampled every `every` seconds
    on a thread of its own."""

    def __init__(self, pid, every=0.1):
        self.pid = pid
        self.peak = proc_status(pid, "VmRSS")
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(every,), daemon=True)
        self._thread.start()

    def _sample(self, every):
        while not self._done.is_set():
            self.peak = max(self.peak, proc_status(self.pid, "VmRSS"))
            time.sleep(every)

    def stop(self):
        """The peak, in KiB."""
        self._done.set()
        self._thread.join()
        return self.peak


def measure_steady(args, wctmon, tag):
    with tempfile.TemporaryDirectory() as state:
        service = start_service(wctmon, state, args.interval, tag)
        try:
            time.sleep(args.warmup)
            cpu0, t0 = proc_cpu_seconds(service.pid), time.time()
            time.sleep(args.seconds)
            cpu1, t1 = proc_cpu_seconds(service.pid), time.time()
            rss = proc_status(service.pid, "VmRSS") / 1024
            hwm = proc_status(service.pid, "VmHWM") / 1024
            fds = len(os.listdir(f"/proc/{service.pid}/fd"))
        finally:
            stop(service)
    return (cpu1 - cpu0) / (t1 - t0) * 100, rss, hwm, fds


def steady(args, builds, fixture):
    tag = f"--tag=steady-{os.getpid()}"
    fixtures = []
    results = {label: [] for label, _ in builds}
    try:
        for _ in range(args.processes):
            fixtures.append(subprocess.Popen([fixture, "idle", str(args.threads), tag],
                                             stdout=subprocess.PIPE, start_new_session=True))
        for fx in fixtures:
            fx.stdout.readline()
        # Rounds interleave the builds: a noisy minute weighs on each of them alike.
        for _ in range(args.rounds):
            for label, wctmon in builds:
                results[label].append(measure_steady(args, wctmon, tag))
    finally:
        for fx in fixtures:
            os.killpg(fx.pid, signal.SIGKILL)
        for fx in fixtures:
            fx.wait()
    threads = args.processes * (args.threads + 1)
    for label, runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        rss = statistics.median(r[1] for r in runs)
        hwm = max(r[2] for r in runs)
        fds = runs[-1][3]
        each = ", ".join(f"{r[0]:.1f}" for r in runs)
        print(f"{label}steady state: {args.processes} processes / {threads} threads at "
              f"{args.interval} ms: CPU median {cpu:.1f} % of one core over {len(runs)} rounds "
              f"({each}; goal <= 5 %), RSS {rss:.1f} MB, peak {hwm:.1f} MB (goal <= 50 MB), "
              f"{fds} descriptors open")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--baseline", help="build directory of an earlier version to compare")
    parser.add_argument("--interval", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--processes", type=int, default=500)
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rounds", type=int, default=3,
                        help="steady-state measurements of each build, interleaved")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-steady", action="store_true")
    args = parser.parse_args()
    fixture = os.path.join(args.build, "tests/wctmon-fixture")
    builds = [("", os.path.join(args.build, "service/wctmon"))]
    if args.baseline:
        builds = [("this build: ", builds[0][1]),
                  ("baseline:   ", os.path.join(args.baseline, "service/wctmon"))]
    if not args.skip_latency:
        for label, wctmon in builds:
            latency(args, wctmon, fixture, label)
    if not args.skip_steady:
        steady(args, builds, fixture)


if __name__ == "__main__":
    main()
