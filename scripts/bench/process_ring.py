#!/usr/bin/python3
"""A deadlock across many processes, made with flock(1): for each i of --processes, `flock L_i`
holds lock file i and waits for its child, which waits for lock file i + 1 (the last for lock
file 0): a cycle through 2 x N processes, file locks and waitpid, every process watched by one
`out_of_proc` target. For each N: whether the deadlock is stored within --seconds, after how long,
the service's CPU (% of one core) and its samples overdue over that time and over its second half
(the ring's steady cost, once its incident is open). A fresh service each.

Run from the repository, with a build that has the service and wctctl:
    scripts/bench/process_ring.py --build build/default [--processes 10,100,300,1000]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api import ApiService  # noqa: E402
from ring import stored, wait_for  # noqa: E402


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def overdue(metrics):
    with urllib.request.urlopen(metrics, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("wctmon_samples_overdue_total"):
                return int(float(line.split()[-1]))
    return 0


def start_ring(n, locks, tag):
    """The processes of the ring, each in a session of its own; every lock is held once this
    returns, and the waits begin a second later."""
    procs = []
    for i in range(n):
        mine, nxt = os.path.join(locks, str(i)), os.path.join(locks, str((i + 1) % n))
        procs.append(subprocess.Popen(
            ["flock", "-x", mine, "sh", "-c", f"sleep 1; exec flock -x {nxt} true {tag}", tag],
            start_new_session=True))
    return procs


def once(args, n):
    with tempfile.TemporaryDirectory() as state, tempfile.TemporaryDirectory() as locks:
        tag = "--tag=pring-" + os.path.basename(state)
        service = ApiService(args.build, state, tag, target={"out_of_proc": True})
        procs = []
        try:
            procs = start_ring(n, locks, tag)
            start = time.monotonic()
            cpu0, overdue0 = cpu_seconds(service.pid), overdue(service.metrics)
            found = wait_for(lambda: [i for i in stored(args.build, state)
                                      if i.get("kind") == "INCIDENT_KIND_DEADLOCK"], args.seconds)
            took = time.monotonic() - start if found else None
            # The second half of the time on its own: the ring's steady cost, once it is open.
            time.sleep(max(0.0, start + args.seconds / 2 - time.monotonic()))
            half, cpu_half, overdue_half = (time.monotonic(), cpu_seconds(service.pid),
                                            overdue(service.metrics))
            time.sleep(max(0.0, start + args.seconds - time.monotonic()))
            end = time.monotonic()
            cpu_end, overdue_end = cpu_seconds(service.pid), overdue(service.metrics)
            return {"processes": 2 * n, "stored_after_s": took,
                    "threads_in_incident": len(found[0].get("threads", [])) if found else 0,
                    "cpu_percent": 100 * (cpu_end - cpu0) / (end - start),
                    "samples_overdue": overdue_end - overdue0,
                    "second_half_cpu_percent": 100 * (cpu_end - cpu_half) / (end - half),
                    "second_half_samples_overdue": overdue_end - overdue_half}
        finally:
            for p in procs:
                os.killpg(p.pid, signal.SIGKILL)
            for p in procs:
                p.wait()
            service.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--processes", default="10,100,300")
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    for n in (int(x) for x in args.processes.split(",")):
        print(json.dumps(once(args, n)), flush=True)


if __name__ == "__main__":
    main()
