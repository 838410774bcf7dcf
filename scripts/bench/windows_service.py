#!/usr/bin/env python3
"""Times the Windows service under Wine, in one fresh prefix, over ROUNDS rounds each (medians and
ranges printed):

- the MSI: its size; msiexec /i -> the service RUNNING; msiexec /x to its end;
- the service started by the SCM: StartService -> RUNNING, StartService -> its first sample (a
  target on services.exe, 1 s interval), ControlService(STOP) -> STOPPED, with metrics on (as
  shipped) and off (the metrics endpoint's own stop is most of a stop).

Usage: scripts/bench/windows_service.py [ROUNDS]   (default 5; after scripts/build-windows.sh)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from wine_support import Service, Wine, free_port, status_json, wait_until  # noqa: E402

BIN = os.path.join(ROOT, "build", "windows", "bin")
LINUX = os.path.join(ROOT, "build", "default")


def summary(name, values):
    ms = sorted(v * 1000 for v in values)
    print(f"{name:<42} median {statistics.median(ms):7.0f} ms   range {ms[0]:.0f}-{ms[-1]:.0f} ms"
          f"   ({len(ms)} rounds)")


def msi_rounds(wine, scm, msi, rounds):
    installs, uninstalls = [], []
    for _ in range(rounds):
        t0 = time.time()
        wine.run("msiexec", "/i", "C:\\bench\\" + os.path.basename(msi), "/qn", timeout=300)
        if scm.ask("wait-running", "30000").get("state") != 4:
            sys.exit("the service did not start after the install")
        installs.append(time.time() - t0)
        t0 = time.time()
        wine.run("msiexec", "/x", "C:\\bench\\" + os.path.basename(msi), "/qn", timeout=300)
        uninstalls.append(time.time() - t0)
    summary("msiexec /i -> RUNNING", installs)
    summary("msiexec /x", uninstalls)


def service_rounds(wine, scm, metrics, rounds):
    state = wine.c_drive("ProgramData", "wctmon")
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(ROOT, "config", "wctmon.windows.json")) as f:
        config = json.load(f)
    port = free_port()
    config["api"] = {"listen": [f"127.0.0.1:{port}"]}
    config["metrics"] = {"listen": f"127.0.0.1:{free_port()}"} if metrics else {"enabled": False}
    config["targets"] = [{"name": "scm", "exe": "services.exe"}]
    with open(os.path.join(state, "wctmon.json"), "w") as f:
        json.dump(config, f)
    reader = os.path.join(state, "api-reader.token")
    starts, samples, stops = [], [], []
    for _ in range(rounds):
        t0 = time.time()
        scm.ask("start")
        if scm.ask("wait-running", "30000").get("state") != 4:
            sys.exit("the service did not start")
        starts.append(time.time() - t0)
        if not wait_until(lambda: (s := status_json(LINUX, port, reader))
                          and int(s.get("samples", 0)) > 0, 30, step=0.01):
            sys.exit("no sample")
        samples.append(time.time() - t0)
        t0 = time.time()
        scm.ask("stop")
        scm.ask("wait-stopped", "30000")
        stops.append(time.time() - t0)
    label = "metrics on" if metrics else "metrics off"
    summary(f"StartService -> RUNNING ({label})", starts)
    summary(f"StartService -> first sample ({label})", samples)
    summary(f"ControlService(STOP) -> STOPPED ({label})", stops)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    msis = [m for m in os.listdir(os.path.join(ROOT, "build", "windows")) if m.endswith(".msi")]
    if not msis:
        sys.exit("no MSI in build/windows: run scripts/build-windows.sh first")
    msi = os.path.join(ROOT, "build", "windows", msis[0])
    print(f"{'MSI ' + msis[0]:<42} {os.path.getsize(msi) / 2**20:.1f} MiB")
    with tempfile.TemporaryDirectory(prefix="wctmon-bench-") as scratch:
        wine = Wine(scratch)
        wine.start()
        try:
            bench = wine.c_drive("bench")
            os.makedirs(bench)
            for f in ("wctmon-scm-control.exe", "wctmond.exe"):
                shutil.copy(os.path.join(BIN, f), bench)
            shutil.copy(msi, bench)
            scm = Service(wine, r"C:\bench\wctmon-scm-control.exe")
            msi_rounds(wine, scm, msi, rounds)
            wine.run("sc", "create", "WctMon", "binpath=",
                     r"C:\bench\wctmond.exe --config C:\ProgramData\wctmon\wctmon.json")
            for metrics in (True, False):
                service_rounds(wine, scm, metrics, rounds)
        finally:
            wine.stop()


if __name__ == "__main__":
    main()
