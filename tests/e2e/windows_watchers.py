#!/usr/bin/env python3
"""wctmond.exe under Wine watches services stuck pending and windows that stop answering:

1. started with neither watched (services.watch empty, detection.window_hung_ms 0), a reload
   turns both on without a restart (the report names services.watch and
   detection.window_hung_ms as applied);
2. a service that reports START_PENDING once (checkpoint 1, a 1 s wait hint) and then blocks on
   a critical section another of its threads holds: a service-hung incident opens, naming the
   service, its state, checkpoint and hint, on the service's process; it resolves once the test
   releases the section and the service runs;
3. a program watched by a target whose window thread stops pumping messages: a window-hung
   incident opens on that process, for that target, naming the window and its thread; it
   resolves once the thread pumps again.
Detection times are printed against the hint and the threshold. Wine's WCT is a stub, so the
incidents carry no wait chains here: their summaries say why, which is checked.

Usage: windows_watchers.py WINDOWS_BIN_DIR LINUX_BUILD_DIR SOURCE_DIR
Environment: WINE (default /usr/lib/wine/wine64); WCTMON_WATCHERS_RUNS (default 1): steps 2 and 3
run that many times each, and the detection times' median and p99 are printed."""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from wine_support import Wine, check, report, tail, wait_until, wctctl

SERVICE_NAME = "WctmonWatchedPending"
RELEASE_EVENT = "Global\\wctmon-watchers-release-"
WAIT_HINT_MS = 1000
WINDOW_HUNG_MS = 2000
POLL_MS = 250


def wine_path(path):
    """A Linux path as a Windows program under Wine names it (drive Z: is /)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def write_config(path, state, watch, window_hung_ms):
    with open(path, "w") as f:
        json.dump({"state_dir": wine_path(state),
                   "sampling": {"interval_ms": POLL_MS},
                   "detection": {"window_hung_ms": window_hung_ms},
                   "services": {"watch": watch, "interval_ms": POLL_MS},
                   "alerts": {"sink": "none"},
                   "log": {"level": "info", "console": False, "file": "wctmon.log"},
                   "api": {"listen": ["127.0.0.1:0"]}, "metrics": {"enabled": False},
                   "targets": [{"name": "hung-window", "exe": "wctmon-hung-window.exe"}]}, f)


def start_program(wine, exe, *args):
    return subprocess.Popen([wine.wine, exe, *args], env=wine.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            bufsize=1, start_new_session=True)


def end_program(proc):
    if proc.poll() is None:
        try:
            proc.stdin.close()
            proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Api:
    def __init__(self, linux_build, port, state):
        self.linux_build = linux_build
        self.port = port
        self.reader = os.path.join(state, "api-reader.token")
        self.admin = os.path.join(state, "api-admin.token")

    def incidents(self, kind):
        # The API's exact mapping (INCIDENT_STATE_OPEN), as an API client reads it.
        r = wctctl(self.linux_build, self.port, self.reader, "incidents", "--kind", kind,
                   "-o", "protojson")
        try:
            return json.loads(r.stdout).get("incidents", [])
        except json.JSONDecodeError:
            return []

    def incident(self, kind, state, where):
        """The first incident of `kind` in `state` ("INCIDENT_STATE_OPEN") that `where` takes."""
        for i in self.incidents(kind):
            if i.get("state") == state and where(i):
                return i
        return None

    def reload(self):
        return wctctl(self.linux_build, self.port, self.admin, "reload", "-o", "json")

    def watches(self, pid):
        r = wctctl(self.linux_build, self.port, self.reader, "ps", "-o", "json")
        return f'"pid": {pid}' in r.stdout or f'"pid":{pid}' in r.stdout


def scm(wine, control_exe, name, *args):
    r = wine.run(control_exe, name, *args)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": r.stdout + r.stderr, "rc": r.returncode}


def reload_turns_watching_on(api, config, state, runs):
    # Each run's service has a name of its own (SERVICE_NAME + the run).
    write_config(config, state, [SERVICE_NAME + str(run) for run in range(runs)], WINDOW_HUNG_MS)
    r = api.reload()
    applied = r.stdout
    check(r.returncode == 0 and "services.watch" in applied and
          "detection.window_hung_ms" in applied,
          "a reload applies services.watch and detection.window_hung_ms live",
          r.stdout + r.stderr)


def service_hung(wine, api, bin_dir, log, run):
    """Returns how long the incident took to open, in ms (None when it did not)."""
    control = os.path.join(bin_dir, "wctmon-scm-control.exe")
    # A service and an event of each run's own: the event stays set once released.
    name = SERVICE_NAME + str(run)
    event = RELEASE_EVENT + str(run)
    holder = start_program(wine, os.path.join(bin_dir, "wctmon-pending-service.exe"),
                           "--release-event", event)
    try:
        check(holder.stdout.readline().strip() == "ready", "the release event is made")
        command = (wine_path(os.path.join(bin_dir, "wctmon-pending-service.exe")) +
                   f" {name} {event} {WAIT_HINT_MS}")
        r = wine.run("sc", "create", name, "binpath=", command)
        check(r.returncode == 0, "the stuck-pending test service is created", r.stdout + r.stderr)
        t0 = time.time()
        started = scm(wine, control, name, "start")
        status = scm(wine, control, name, "query")
        check(status.get("state") == 2 and status.get("checkpoint") == 1,
              "it is START_PENDING at checkpoint 1", json.dumps([started, status]))
        pid = status.get("pid", 0)

        def opened():
            return api.incident("service-hung", "INCIDENT_STATE_OPEN",
                                lambda i: f"service {name} " in i.get("summary", ""))

        incident = wait_until(opened, 30, step=0.1)
        took = time.time() - t0
        check(incident is not None, "a service-hung incident opens", tail(log))
        if incident is None:
            return None
        print(f"     (service-hung: open {took * 1000:.0f} ms after the start, wait hint "
              f"{WAIT_HINT_MS} ms, SCM read every {POLL_MS} ms)")
        summary = incident.get("summary", "")
        check(incident.get("kind") == "INCIDENT_KIND_SERVICE_HUNG" and
              incident.get("target") == "services", "of kind service-hung, target services",
              json.dumps(incident)[:2000])
        check(incident.get("pid") == pid, "on the service's process", f"{incident.get('pid')} {pid}")
        check(f"service {name}" in summary and "START_PENDING at checkpoint 1" in summary
              and "past its wait hint of 1s" in summary,
              "naming the service, its state, checkpoint and hint", summary)
        # WCT is a stub under Wine: the chains of the process cannot be read, and it says so.
        check(bool(incident.get("chains")) or "wait chains could not be read" in summary,
              "with the process's wait chains, or why there are none", summary)
        check(took * 1000 >= WAIT_HINT_MS, "not before the hint ran out", f"{took:.3f} s")

        holder.stdin.write("release\n")
        holder.stdin.flush()
        t1 = time.time()

        def resolved():
            return api.incident("service-hung", "INCIDENT_STATE_RESOLVED",
                                lambda i: i.get("id") == incident.get("id"))

        done = wait_until(resolved, 30, step=0.1)
        check(done is not None, "it resolves once the service is released", tail(log))
        if done is not None:
            print(f"     (resolved {(time.time() - t1) * 1000:.0f} ms after the release)")
            check("RUNNING" in done.get("resolution", ""), "saying the service runs now",
                  done.get("resolution", ""))
        return took * 1000
    finally:
        holder.stdin.close()
        holder.wait(10)
        scm(wine, control, name, "stop")
        scm(wine, control, name, "wait-stopped", "10000")
        wine.run("sc", "delete", name)


def window_hung(wine, api, bin_dir, log, runs):
    """Returns how long each incident took to open, in ms."""
    fixture = start_program(wine, os.path.join(bin_dir, "wctmon-hung-window.exe"))
    times = []
    try:
        ready = fixture.stdout.readline().split()
        if not check(len(ready) == 3 and ready[0] == "ready", "the hung-window program runs",
                     repr(ready)):
            return times
        pid, tid = int(ready[1]), int(ready[2])
        check(wait_until(lambda: api.watches(pid), 30, step=0.2) is not None,
              "its target watches it", tail(log))
        for _ in range(runs):
            took = hang_window_once(api, fixture, pid, tid, log)
            if took is None:
                break
            times.append(took)
    finally:
        end_program(fixture)
    return times


def hang_window_once(api, fixture, pid, tid, log):
    fixture.stdin.write("hang\n")
    fixture.stdin.flush()
    check(fixture.stdout.readline().strip() == "hanging", "its window thread stops pumping")
    t0 = time.time()

    def opened():
        return api.incident("window-hung", "INCIDENT_STATE_OPEN",
                            lambda i: i.get("pid") == pid)

    incident = wait_until(opened, 30, step=0.1)
    took = time.time() - t0
    check(incident is not None, "a window-hung incident opens", tail(log))
    if incident is None:
        return None
    print(f"     (window-hung: open {took * 1000:.0f} ms after the thread stopped pumping, "
          f"threshold {WINDOW_HUNG_MS} ms, windows probed every {POLL_MS} ms)")
    summary = incident.get("summary", "")
    check(incident.get("kind") == "INCIDENT_KIND_WINDOW_HUNG" and
          incident.get("target") == "hung-window",
          "of kind window-hung, for the target that watches the process",
          json.dumps(incident)[:2000])
    check('"wctmon hung window"' in summary and f"of thread {tid}" in summary,
          "naming the window and its thread", summary)
    check(any(t.get("tid") == tid for t in incident.get("threads", [])),
          "the window's thread is the incident's thread", json.dumps(incident.get("threads")))
    check(took * 1000 >= WINDOW_HUNG_MS, "not before the threshold", f"{took:.3f} s")

    fixture.stdin.write("release\n")
    fixture.stdin.flush()
    fixture.stdout.readline()
    t1 = time.time()

    def resolved():
        return api.incident("window-hung", "INCIDENT_STATE_RESOLVED",
                            lambda i: i.get("id") == incident.get("id"))

    done = wait_until(resolved, 30, step=0.1)
    check(done is not None, "it resolves once the thread pumps again", tail(log))
    if done is not None:
        print(f"     (resolved {(time.time() - t1) * 1000:.0f} ms after the release)")
        check("answers messages again" in done.get("resolution", ""),
              "saying the window answers again", done.get("resolution", ""))
    return took * 1000


def summarize(kind, times, against):
    if len(times) < 2:
        return
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    print(f"     ({kind}, {len(times)} runs: median {statistics.median(ordered):.0f} ms, "
          f"p99 {p99:.0f} ms, min {ordered[0]:.0f} ms, {against})")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bin_dir, linux_build, _source_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="wctmon-watchers-") as scratch:
        wine = Wine(scratch)
        wine.start(windows=True)
        service = None
        state = os.path.join(scratch, "state")
        os.makedirs(state)
        config = os.path.join(state, "wctmon.json")
        log = os.path.join(state, "wctmon.log")
        try:
            write_config(config, state, [], 0)
            service = subprocess.Popen([wine.wine, os.path.join(bin_dir, "wctmond.exe"),
                                        "--config", wine_path(config)], env=wine.env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)

            def listening():
                if not os.path.exists(log):
                    return None
                with open(log, errors="replace") as f:
                    return re.search(r"API listening on 127\.0\.0\.1:(\d+)", f.read())

            m = wait_until(listening, 120, step=0.2)
            check(m is not None, "wctmond.exe runs under Wine and serves the API", tail(log))
            if m is None:
                return
            api = Api(linux_build, m[1], state)
            runs = int(os.environ.get("WCTMON_WATCHERS_RUNS", "1"))
            reload_turns_watching_on(api, config, state, runs)
            service_times = []
            for run in range(runs):
                took = service_hung(wine, api, bin_dir, log, run)
                if took is None:
                    break
                service_times.append(took)
            window_times = window_hung(wine, api, bin_dir, log, runs)
            summarize("service-hung", service_times, f"wait hint {WAIT_HINT_MS} ms")
            summarize("window-hung", window_times, f"threshold {WINDOW_HUNG_MS} ms")
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
