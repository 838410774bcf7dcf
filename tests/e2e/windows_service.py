#!/usr/bin/env python3
"""wctmond.exe as a Windows service under Wine's service control manager, in a fresh prefix:

1. registered with `sc create` (LocalSystem, automatic), then `wctmond.exe --configure-service`
   (idempotent: run twice) sets the preshutdown timeout, the failure actions, the event source
   and the state directory, and names the settings Wine does not know;
2. started: START_PENDING with a wait hint, then RUNNING accepting STOP, SHUTDOWN, PRESHUTDOWN
   and PARAMCHANGE; the native Linux wctctl asks it over loopback (platform windows, WCT
   unavailable under Wine and why, alerts to the Event Log); it samples its configured target;
   a second wctmond.exe on its state directory is refused; its metrics carry its target, its
   sinks and its own process's figures;
3. a target added with wctctl persists across a stop and a start;
4. PARAMCHANGE reloads the configuration (the changed level applies live);
5. a stop is STOP_PENDING with a wait hint, then STOPPED with exit code 0 within that hint;
6. a configuration that cannot be used ends the start in STOPPED with
   ERROR_SERVICE_SPECIFIC_ERROR and service-specific exit code 1;
7. --remove-service-config removes the event source's registration.
Prints the figures: start -> RUNNING, start -> first sample, stop -> STOPPED.

Usage: windows_service.py WINDOWS_BIN_DIR LINUX_BUILD_DIR SOURCE_DIR
Environment: WINE (default /usr/lib/wine/wine64)."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from webhook_receiver import receiver
from wine_support import (EVENT_SOURCE_KEY, RUNNING_CONTROLS, SERVICE, Service, Wine, check,
                          free_port, report, status_json, tail, wait_until, wctctl)

def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    windows_bin, linux_build, source_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="wctmon-service-") as scratch:
        wine = Wine(scratch)
        wine.start()
        try:
            run(wine, windows_bin, linux_build, source_dir)
        finally:
            wine.stop()
    report()


def web_hook():
    """A web hook receiver on a loopback port, in a thread: (its URL, the bodies it took)."""
    received = []
    server = receiver(0, lambda body: received.append(json.loads(body)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/wctmon", received


def metrics_of_windows(port, started):
    """The Windows service's metrics: its targets', its sinks' and its own process's figures
    (GetProcessTimes, GetProcessMemoryInfo, GetProcessHandleCount), and only wctmon's families."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    except OSError as e:
        check(False, "the Windows service serves its metrics", str(e))
        return
    figures = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            figures[name] = float(value)
    check('wctmon_build_info{platform="windows",version="' in text
          and figures.get('wctmon_target_watched_processes{target="scm"}', 0) >= 1
          and 'wctmon_target_incidents_open{target="scm",kind="deadlock"}' in figures,
          "its metrics name the target scm, watching services.exe", text)
    check(all(n.startswith(("wctmon_", "process_")) for n in figures)
          and not any(v != v for v in figures.values()),
          "only wctmon's families and the process's, every figure a number (no exposer_*)", text)
    check(any(n.startswith('wctmon_alerts_delivered_total{sink="') for n in figures),
          "each alert sink has its delivery figures", text)
    check(figures.get("process_resident_memory_bytes", 0) > 1 << 20
          and figures.get("process_virtual_memory_bytes", 0) > 1 << 20
          and figures.get("process_cpu_seconds_total", 0) > 0
          # Wine's GetProcessHandleCount is a stub that answers 0: then no process_open_fds.
          and figures.get("process_open_fds", 1) > 0
          and figures.get("process_max_fds") == 16 * 1024 * 1024
          and started - 60 < figures.get("process_start_time_seconds", 0) <= time.time() + 1,
          "the process_* figures of wctmond.exe itself", text)


def run(wine, windows_bin, linux_build, source_dir):
    install = wine.c_drive("wctmon-test")
    os.makedirs(install)
    for exe in ("wctmond.exe", "wctmon-scm-control.exe"):
        shutil.copy(os.path.join(windows_bin, exe), install)
    service_exe = r"C:\wctmon-test\wctmond.exe"
    scm = Service(wine, r"C:\wctmon-test\wctmon-scm-control.exe")

    # The shipped Windows configuration, on ports of this test's own, watching services.exe.
    state = wine.c_drive("ProgramData", "wctmon")
    os.makedirs(state)
    with open(os.path.join(source_dir, "config", "wctmon.windows.json")) as f:
        config = json.load(f)
    port = free_port()
    config["api"] = {"listen": [f"127.0.0.1:{port}"]}
    metrics_port = free_port()
    config["metrics"] = {"listen": f"127.0.0.1:{metrics_port}"}
    config["targets"] = [{"name": "scm", "exe": "services.exe"}]
    hook_url, hooked = web_hook()
    config["alerts"]["sinks"] = ["eventlog", {"type": "webhook", "url": hook_url}]
    config_file = os.path.join(state, "wctmon.json")
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)
    command = service_exe + r" --config C:\ProgramData\wctmon\wctmon.json"

    r = wine.run("sc", "create", SERVICE, "binpath=", command, "start=", "auto")
    check(r.returncode == 0, "sc create registers the service", r.stdout + r.stderr)

    for attempt in ("", " again (idempotent)"):
        r = wine.run(service_exe, "--configure-service")
        check(r.returncode == 0 and "service configured" in r.stdout,
              "wctmond.exe --configure-service" + attempt, r.stdout + r.stderr)
    check("does not know the service's delayed automatic start" in r.stderr,
          "and names the settings Wine does not know", r.stderr)
    cfg = scm.ask("config")
    check(cfg.get("preshutdown_ms") == 15000, "the preshutdown timeout is 15 s", json.dumps(cfg))
    r = wine.run("reg", "query", EVENT_SOURCE_KEY)
    check(r.returncode == 0 and "EventMessageFile" in r.stdout and "wctmond.exe" in r.stdout
          and re.search(r"CategoryCount\s+REG_DWORD\s+0x4", r.stdout) is not None,
          "the event source is registered with wctmond.exe's message table", r.stdout + r.stderr)

    # Start: pending with a hint, then running with its controls.
    t0 = time.time()
    started = scm.ask("start")
    check(started.get("state") in (2, 4) and started.get("wait_hint", 0) in (0, 10000),
          "StartService: START_PENDING with a 10 s wait hint", json.dumps(started))
    running = scm.ask("wait-running", "30000")
    start_to_running = time.time() - t0
    check(running.get("state") == 4 and running.get("controls") == RUNNING_CONTROLS,
          "RUNNING, accepting STOP, SHUTDOWN, PRESHUTDOWN and PARAMCHANGE", json.dumps(running))
    admin = os.path.join(state, "api-admin.token")
    reader = os.path.join(state, "api-reader.token")
    st = wait_until(lambda: status_json(linux_build, port, reader), 30)
    log = os.path.join(state, "wctmon.log")
    if not check(st is not None,
                 "the Linux wctctl reads its status over loopback with the reader token",
                 wctctl(linux_build, port, reader, "status").stderr + tail(log)):
        return
    check(st.get("platform") == "windows", "it says it is the Windows build", json.dumps(st))
    source = st.get("source", {})
    check(source.get("name") == "windows-wct" and not source.get("available", True)
          and "not supported" in source.get("reason", ""),
          "and that WCT is unavailable under Wine, and why", json.dumps(source))
    alerts = st.get("alerts", {})
    check("Event Log" in alerts.get("route", "") and hook_url in alerts.get("route", ""),
          "its alerts go to the Event Log and to the web hook", json.dumps(alerts))
    started_hook = wait_until(
        lambda: next((h for h in hooked if h.get("event") == "service_started"), None), 30)
    check(started_hook is not None and started_hook.get("message_id") ==
          "5ce0be8b13114c75b1abfb9ee90a4e16", "the web hook gets the service's start as JSON",
          json.dumps(hooked))
    sampled = wait_until(lambda: (s := status_json(linux_build, port, reader))
                         and int(s.get("samples_total", s.get("samples", 0)) or 0) > 0 and s, 30)
    start_to_sample = time.time() - t0
    check(sampled is not None, "it samples its configured target (services.exe)",
          json.dumps(status_json(linux_build, port, reader)))

    metrics_of_windows(metrics_port, t0)

    # A dump asked for now (admin): a minidump under the state directory's dumps, the analysis
    # inside saying why there is none (no WCT under Wine); the reader may not ask.
    ps = wctctl(linux_build, port, reader, "ps", "-o", "json")
    watched = json.loads(ps.stdout).get("processes", []) if ps.returncode == 0 else []
    if check(len(watched) > 0, "wctctl ps lists services.exe", ps.stdout + ps.stderr):
        pid = str(watched[0].get("pid"))
        r = wctctl(linux_build, port, reader, "dump", pid)
        check(r.returncode == 5, "wctctl dump with the reader token is refused", r.stderr)
        r = wctctl(linux_build, port, admin, "dump", pid, "-o", "json")
        made = json.loads(r.stdout) if r.returncode == 0 else {}
        path = made.get("path", "")
        check(made.get("format") == "minidump" and path.startswith("C:\\ProgramData\\wctmon\\dumps\\pid-"
                                                                 + pid + "-") and path.endswith(".dmp"),
              "wctctl dump PID writes a minidump under C:\\ProgramData\\wctmon\\dumps",
              r.stdout + r.stderr)
        local = wine.c_drive("ProgramData", "wctmon", "dumps", path.split("\\")[-1])
        if check(os.path.exists(local) and os.path.getsize(local) == int(made.get("bytes", 0)),
                 "the file is there, of the size said", local):
            with open(local, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            check(digest == made.get("sha256"), "and its SHA-256 is the one said", digest)
            info = subprocess.run([os.path.join(linux_build, "service", "wctmon"), "dump", "info",
                                   local], capture_output=True, text=True, timeout=60)
            check(info.returncode == 0 and '"error"' in info.stdout,
                  "wctmon dump info reads the analysis it carries (none under Wine, and why)",
                  info.stdout + info.stderr)

    # A target added at run time persists across a stop and a start.
    # One service per state directory: wctmond.exe by hand on the same one is refused.
    r = wine.run(service_exe, "--config", r"C:\ProgramData\wctmon\wctmon.json", timeout=60)
    check(r.returncode == 1 and f"is in use by another wctmon service (pid {running.get('pid')};"
          in r.stderr, "a second service on the same state directory is refused, naming the first",
          r.stdout + r.stderr)

    r = wctctl(linux_build, port, admin, "targets", "add", "--name", "explorer",
               "--exe", "explorer.exe")
    check(r.returncode == 0, "wctctl targets add (admin token)", r.stdout + r.stderr)

    # PARAMCHANGE reloads: a changed log level applies live.
    config["log"]["level"] = "debug"
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)
    changed = scm.ask("paramchange")
    check(changed.get("state") == 4, "PARAMCHANGE is accepted while running", json.dumps(changed))
    reloaded = wait_until(lambda: os.path.exists(log) and re.search(
        r"configuration reloaded from .*: applied log\.level", open(log, errors="replace").read()),
        10)
    check(reloaded is not None, "and reloads the configuration (log.level applied live)",
          tail(log))

    # Stop: pending with a hint, stopped with exit code 0 within it.
    t0 = time.time()
    stopping = scm.ask("stop")
    stopped = scm.ask("wait-stopped", "30000")
    stop_to_stopped = time.time() - t0
    hint = max(stopping.get("wait_hint", 0), stopped.get("max_wait_hint", 0))
    check(stopping.get("state") in (1, 3) and hint == 5000,
          "ControlService(STOP): STOP_PENDING with a 5 s wait hint", json.dumps(stopping))
    check(stopped.get("state") == 1 and stopped.get("win32_exit") == 0
          and stopped.get("service_exit") == 0, "STOPPED with exit code 0", json.dumps(stopped))
    check(stop_to_stopped * 1000 < hint, f"within the wait hint ({stop_to_stopped * 1000:.0f} ms)")

    scm.ask("start")
    check(scm.ask("wait-running", "30000").get("state") == 4, "started again")
    listed = wait_until(lambda: (r := wctctl(linux_build, port, reader, "targets", "list", "-o",
                                             "json")).returncode == 0 and r.stdout, 30)
    check(listed is not None and "explorer.exe" in listed,
          "the target added at run time is still there", listed or "")
    scm.ask("stop")
    scm.ask("wait-stopped", "30000")

    # A configuration that cannot be used: the start fails, said by the exit codes.
    bad = os.path.join(state, "bad.json")
    with open(bad, "w") as f:
        json.dump({"sampling": {"interval_ms": 1}}, f)
    scm.ask("command", service_exe + r" --config C:\ProgramData\wctmon\bad.json")
    scm.ask("start")
    failed = scm.ask("wait-stopped", "30000")
    check(failed.get("state") == 1 and failed.get("win32_exit") == 1066
          and failed.get("service_exit") == 1,
          "an unusable configuration: STOPPED, ERROR_SERVICE_SPECIFIC_ERROR, exit code 1",
          json.dumps(failed))

    r = wine.run(service_exe, "--remove-service-config")
    check(r.returncode == 0, "wctmond.exe --remove-service-config", r.stdout + r.stderr)
    r = wine.run("reg", "query", EVENT_SOURCE_KEY)
    check(r.returncode != 0, "removes the event source's registration", r.stdout)
    check(os.path.exists(config_file), "and keeps the state directory")
    r = wine.run("sc", "delete", SERVICE)
    check(r.returncode == 0, "sc delete", r.stdout + r.stderr)

    print(f"     figures: start -> RUNNING {start_to_running * 1000:.0f} ms, "
          f"start -> first sample {start_to_sample * 1000:.0f} ms, "
          f"stop -> STOPPED {stop_to_stopped * 1000:.0f} ms")


if __name__ == "__main__":
    main()
