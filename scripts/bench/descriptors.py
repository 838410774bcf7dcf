#!/usr/bin/env python3
"""The service's descriptors against the threads it watches: one process of --threads idle
threads (30,000 by default) plus a deadlock, watched at --interval, with the service's own
descriptor limit (default: what the system gives it) and with --nofile (256, as
`prlimit --nofile=256` sets it). For each: whether and how fast the deadlock was caught, the most
descriptors the service held, its CPU % of one core and RSS over --seconds.

A process of 30,000 threads needs a pid_max above that: below threads + 2,000 it is raised for
the run (root) and set back after."""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service import proc_cpu_seconds, proc_status, start_service, stop  # noqa: E402


def descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def caught(state, pid):
    import sqlite3
    try:
        db = sqlite3.connect(f"file:{os.path.join(state, 'incidents.db')}?mode=ro", uri=True)
        return db.execute("SELECT 1 FROM incidents WHERE pid = ? AND kind = 'deadlock'",
                          (pid,)).fetchone() is not None
    except sqlite3.Error:
        return False


def run(args, wctmon, fixture, nofile):
    with tempfile.TemporaryDirectory() as state:
        tag = "--tag=descriptors-" + os.path.basename(state)
        fx = subprocess.Popen([fixture, "idle-abba", str(args.threads), tag],
                              stdout=subprocess.PIPE, start_new_session=True)
        fx.stdout.readline()  # the report: every thread made, the deadlock formed
        prefix = ("prlimit", f"--nofile={nofile}:{nofile}") if nofile else ()
        start = time.time()
        service = start_service(wctmon, state, args.interval, tag, prefix=prefix)
        most = 0
        try:
            while not caught(state, fx.pid):
                most = max(most, descriptors(service.pid))
                if time.time() - start > 120 or service.poll() is not None:
                    return None
                time.sleep(0.01)
            detect = time.time() - start
            cpu0, t0 = proc_cpu_seconds(service.pid), time.time()
            while time.time() - t0 < args.seconds:
                most = max(most, descriptors(service.pid))
                time.sleep(0.01)
            cpu = (proc_cpu_seconds(service.pid) - cpu0) / (time.time() - t0) * 100
            rss = proc_status(service.pid, "VmRSS") / 1024
            with open(f"/proc/{service.pid}/limits") as f:
                limit = next(line.split()[3] for line in f if line.startswith("Max open files"))
        finally:
            stop(service)
            os.killpg(fx.pid, 9)
            fx.wait()
    return detect, most, limit, cpu, rss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--threads", type=int, default=30000)
    parser.add_argument("--interval", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--nofile", type=int, default=256)
    args = parser.parse_args()
    wctmon = os.path.join(args.build, "service", "wctmon")
    fixture = os.path.join(args.build, "tests", "wctmon-fixture")
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    if pid_max < args.threads + 2000:
        with open("/proc/sys/kernel/pid_max", "w") as f:
            f.write(str(4194304))
    try:
        print(f"{args.threads} idle threads and a deadlock, sampled every {args.interval} ms")
        print(f"{'limit':>10} {'caught after':>13} {'most fds':>9} {'CPU %':>6} {'RSS MB':>7}")
        for nofile in (None, args.nofile):
            result = run(args, wctmon, fixture, nofile)
            if result is None:
                print(f"{nofile or 'system':>10}  deadlock not caught within 120 s")
                continue
            detect, most, limit, cpu, rss = result
            print(f"{limit:>10} {detect:>12.1f}s {most:>9} {cpu:>6.1f} {rss:>7.1f}")
    finally:
        if pid_max < args.threads + 2000:
            with open("/proc/sys/kernel/pid_max", "w") as f:
                f.write(str(pid_max))


if __name__ == "__main__":
    main()
