#!/usr/bin/python3
"""One large deadlock against the rest: a ring of --threads threads (the fixture's `ring`, one
deadlock) watched by a fresh service at a 1 s interval with capture on, and, once the ring's
incident is stored, an unrelated two-thread deadlock in another process. Reports how long the
ring took to be stored, how long after it formed the unrelated deadlock was stored (the goal:
within one interval + 1 s), the service's RSS before the ring, at its peak (sampled every 100 ms)
and at the end, and the incidents stored over --seconds by kind (one deadlock for the ring, no
hang of its members). Medians of --rounds, a fresh service each.

Run from the repository, with a build that has the service, wctctl and the fixture:
    cmake --build build/default --target wctmond wctmon wctctl wctmon-fixture
    scripts/bench/ring.py --build build/default [--threads 5000] [--seconds 90]
Raises kernel.threads-max and vm.max_map_count for the run when they are too low.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api import ApiService, kill_all, start_fixtures  # noqa: E402
from service import RssPeak, proc_status  # noqa: E402


def stored(build, state):
    """Every incident of the store of `state`, as `wctmon incidents --json` lists them."""
    config = os.path.join(state, "query.json")
    if not os.path.exists(config):
        with open(config, "w") as f:
            json.dump({"state_dir": state}, f)
    r = subprocess.run([os.path.join(build, "service/wctmon"), "incidents", "--config", config,
                        "--json"], capture_output=True, text=True)
    return json.loads(r.stdout).get("incidents", []) if r.returncode == 0 else []


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    return None


def round_once(args):
    fixture = os.path.join(args.build, "tests/wctmon-fixture")
    with tempfile.TemporaryDirectory() as state:
        tag = "--tag=ring-" + os.path.basename(state)
        service = ApiService(args.build, state, tag)
        fixtures = []
        try:
            pid = service.pid
            time.sleep(1)
            before = proc_status(pid, "VmRSS")
            peak = RssPeak(pid)
            start = time.monotonic()
            ring = start_fixtures(fixture, "ring", 1, args.threads, tag)
            fixtures += ring
            ring_formed = time.monotonic() - start

            def ring_incident():
                return [i for i in stored(args.build, state)
                        if i.get("pid") == ring[0].pid and i.get("kind") == "INCIDENT_KIND_DEADLOCK"]

            found = wait_for(ring_incident, args.seconds)
            ring_stored = time.monotonic() - start if found else None
            other = start_fixtures(fixture, "mutex-abba", 1, 0, tag)
            fixtures += other
            formed = time.monotonic()

            def other_incident():
                return [i for i in stored(args.build, state)
                        if i.get("pid") == other[0].pid and i.get("kind") == "INCIDENT_KIND_DEADLOCK"]

            other_found = wait_for(other_incident, args.seconds)
            other_stored = time.monotonic() - formed if other_found else None
            remaining = args.seconds - (time.monotonic() - start)
            if remaining > 0:
                time.sleep(remaining)
            peak_rss = peak.stop()
            end = proc_status(pid, "VmRSS")
            kinds = {}
            for i in stored(args.build, state):
                if i.get("pid") == ring[0].pid:
                    kinds[i["kind"]] = kinds.get(i["kind"], 0) + 1
            alive = service.proc.poll() is None
        finally:
            kill_all(fixtures)
            service.stop()
    return {"ring_formed_s": ring_formed, "ring_stored_s": ring_stored,
            "other_stored_s": other_stored, "rss_before_mb": before / 1024,
            "rss_peak_mb": peak_rss / 1024, "rss_end_mb": end / 1024, "ring_incidents": kinds,
            "alive": alive}


def raise_limit(path, wanted):
    with open(path) as f:
        now = int(f.read())
    if now < wanted:
        with open(path, "w") as f:
            f.write(str(wanted))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--threads", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    raise_limit("/proc/sys/kernel/threads-max", 4 * args.threads + 10000)
    raise_limit("/proc/sys/vm/max_map_count", 4 * args.threads + 65530)
    rounds = [round_once(args) for _ in range(args.rounds)]
    print(f"a ring of {args.threads} threads, {args.seconds:.0f} s, {args.rounds} round(s): "
          "medians (min-max)")
    for key in ("ring_formed_s", "ring_stored_s", "other_stored_s", "rss_before_mb",
                "rss_peak_mb", "rss_end_mb"):
        values = [r[key] for r in rounds if r[key] is not None]
        if not values:
            print(f"  {key:16} never")
            continue
        print(f"  {key:16} {statistics.median(values):8.1f}  ({min(values):.1f}-{max(values):.1f})")
    for r in rounds:
        print(f"  incidents of the ring's process: {r['ring_incidents']}; service alive: "
              f"{r['alive']}")


if __name__ == "__main__":
    main()
