#!/usr/bin/env python3
"""wctmond.exe under Wine finds busy threads:

1. a program whose thread spins in one function (wctmon-wct-fixture.exe spin), watched by a
   target with busy on (cpu_percent 50, threshold 2 s): a busy incident opens on that thread,
   naming wctmon_fixture_spin, after the threshold; the thread was held only for its samples (it
   kept running); the incident resolves, at the latest when the program ends;
2. a program whose thread works through changing data in six functions (... work), watched by
   the same target: its thread is profiled as busy, judged to make progress (the service's log
   says so), and no incident opens for it.
Wine's WCT is a stub: the samples carry only the threads and their CPU time, which is what busy
threads are found from.

Usage: windows_busy.py WINDOWS_BIN_DIR LINUX_BUILD_DIR SOURCE_DIR
Environment: WINE (default /usr/lib/wine/wine64)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from wine_support import Wine, check, report, tail, wait_until, wctctl

THRESHOLD_MS = 2000
POLL_MS = 250


def wine_path(path):
    """A Linux path as a Windows program under Wine names it (drive Z: is /)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def write_config(path, state):
    with open(path, "w") as f:
        # Busy is off by default here and on for the target: the target's own busy is what
        # applies to its processes. Half a core: two busy fixtures, the service (naming the
        # samples with DbgHelp) and Wine's server share two cores here.
        json.dump({"state_dir": wine_path(state),
                   "sampling": {"interval_ms": POLL_MS},
                   "detection": {"busy": {"enabled": False}},
                   "alerts": {"sink": "none"},
                   "log": {"level": "info", "console": False, "file": "wctmon.log"},
                   "api": {"listen": ["127.0.0.1:0"]}, "metrics": {"enabled": False},
                   "targets": [{"name": "fixture", "exe": "wctmon-wct-fixture.exe",
                                "busy": {"enabled": True, "cpu_percent": 50,
                                         "threshold_ms": THRESHOLD_MS}}]}, f)


class Fixture:
    """wctmon-wct-fixture.exe with a scenario, its ready line read."""

    def __init__(self, wine, bin_dir, *args):
        self.proc = subprocess.Popen([wine.wine, os.path.join(bin_dir, "wctmon-wct-fixture.exe"),
                                      *args], env=wine.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     bufsize=1, start_new_session=True)
        ready = self.proc.stdout.readline().split()
        self.ok = len(ready) == 3 and ready[0] == "ready"
        self.pid = int(ready[1]) if self.ok else 0
        self.tid = int(ready[2]) if self.ok else 0

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def end(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def incidents(linux_build, port, token):
    # The API's exact mapping (INCIDENT_KIND_BUSY), as an API client reads it.
    r = wctctl(linux_build, port, token, "incidents", "--kind", "busy", "-o", "protojson")
    try:
        return json.loads(r.stdout).get("incidents", [])
    except json.JSONDecodeError:
        return []


def logged(log, pattern):
    if not os.path.exists(log):
        return None
    with open(log, errors="replace") as f:
        return re.search(pattern, f.read())


def busy_cases(wine, bin_dir, linux_build, port, reader, log):
    spin = Fixture(wine, bin_dir, "spin")
    work = Fixture(wine, bin_dir, "work")
    try:
        if not check(spin.ok and work.ok, "the spinning and the working fixture run"):
            return
        t0 = time.time()
        watched = wait_until(lambda: all(
            f'"pid": {f.pid}' in wctctl(linux_build, port, reader, "ps", "-o", "json").stdout
            for f in (spin, work)), 30, step=0.2)
        check(watched is not None, "the target watches both", tail(log))

        def opened():
            # In any state: on a loaded machine the spinning thread may get less than its share
            # of a core for a moment, which resolves the incident as soon as it opened.
            for i in incidents(linux_build, port, reader):
                if i.get("pid") == spin.pid:
                    return i
            return None

        incident = wait_until(opened, 60, step=0.2)
        took = time.time() - t0
        if not check(incident is not None, "a busy incident opens for the spinning thread",
                     tail(log)):
            return
        print(f"     (busy: open {took * 1000:.0f} ms after the program started, threshold "
              f"{THRESHOLD_MS} ms, then 2 x 1 s of samples)")
        summary = incident.get("summary", "")
        check(incident.get("kind") == "INCIDENT_KIND_BUSY" and incident.get("target") == "fixture",
              "of kind busy, for the target", json.dumps(incident)[:2000])
        check(f"thread {spin.tid} " in summary and "wctmon_fixture_spin" in summary,
              "naming the thread and the function it spins in", summary)
        check(any(t.get("tid") == spin.tid for t in incident.get("threads", [])),
              "the spinning thread is the incident's thread", json.dumps(incident.get("threads")))
        check(took * 1000 >= THRESHOLD_MS, "not before the threshold", f"{took:.3f} s")
        # The sampling held it only for its register reads: it runs on.
        before = int(spin.ask("count") or 0)
        time.sleep(0.2)
        check(int(spin.ask("count") or 0) > before, "the spinning thread kept running")

        # The working thread was profiled as well (it is as busy) and judged to make progress.
        judged = wait_until(lambda: logged(
            log, rf"thread {work.tid} of pid {work.pid} uses a whole core, and "), 30, step=0.2)
        check(judged is not None, "the working thread is profiled and found making progress",
              tail(log))
        if judged is not None:
            line = logged(log, rf"thread {work.tid} of pid {work.pid} uses a whole core, and [^\n]*")
            print(f"     ({line[0] if line else ''})")
        check(not any(i.get("pid") == work.pid for i in incidents(linux_build, port, reader)),
              "no busy incident for the working thread",
              json.dumps(incidents(linux_build, port, reader))[:2000])

        spin.end()
        t1 = time.time()

        def resolved():
            for i in incidents(linux_build, port, reader):
                if i.get("id") == incident.get("id") and i.get("state") == "INCIDENT_STATE_RESOLVED":
                    return i
            return None

        done = wait_until(resolved, 30, step=0.2)
        check(done is not None, "it resolves, at the latest once the program ends", tail(log))
        if done is not None:
            print(f"     (resolved {(time.time() - t1) * 1000:.0f} ms after the end: "
                  f"{done.get('resolution', '')})")
    finally:
        spin.end()
        work.end()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bin_dir, linux_build, _source_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="wctmon-busy-") as scratch:
        wine = Wine(scratch)
        wine.start()
        service = None
        state = os.path.join(scratch, "state")
        os.makedirs(state)
        config = os.path.join(state, "wctmon.json")
        log = os.path.join(state, "wctmon.log")
        try:
            write_config(config, state)
            service = subprocess.Popen([wine.wine, os.path.join(bin_dir, "wctmond.exe"),
                                        "--config", wine_path(config)], env=wine.env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
            m = wait_until(lambda: logged(log, r"API listening on 127\.0\.0\.1:(\d+)"), 120,
                           step=0.2)
            check(m is not None, "wctmond.exe runs under Wine and serves the API", tail(log))
            if m is None:
                return
            reader = os.path.join(state, "api-reader.token")
            busy_cases(wine, bin_dir, linux_build, m[1], reader, log)
        finally:
            if service is not None and service.poll() is None:
                os.killpg(service.pid, signal.SIGTERM)
                try:
                    service.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(service.pid, signal.SIGKILL)
            wine.stop()
    report()


if __name__ == "__main__":
    main()
