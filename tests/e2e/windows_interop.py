#!/usr/bin/env python3
"""The Windows executables under Wine, next to the native Linux ones:

1. wctmon.exe validate-config accepts and rejects files as the Linux wctmon does (same lines,
   same exit codes), and refuses the Linux config's /var/lib/wctmon, not absolute on Windows;
2. wctmon.exe analyze --pid <a Wine process> exits 1 with one line saying WCT is not supported
   here (Wine's OpenThreadWaitChainSession is a stub);
3. wctmon.exe dump writes a minidump of a Wine process deadlocked on two critical sections, with
   its diagnosis (here: why WCT could not tell) in a user stream that the native `wctmon dump
   info` reads back, and lldb opens it with the process's threads;
4. wctctl.exe status under Wine asks the native Linux wctmond over loopback;
5. the native wctctl asks wctmond.exe, running in the foreground under Wine, over loopback: it
   runs, serves the API, and says that its wait-chain source (WCT) is unavailable and why.

Usage: windows_interop.py WINDOWS_BIN_DIR LINUX_BUILD_DIR SOURCE_DIR
Environment: WINE (default /usr/lib/wine/wine64), WINEPREFIX (a prefix of the test's own when
unset)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

FAILURES = []


def check(condition, what, detail=""):
    print(("ok   " if condition else "FAIL ") + what + (f"\n     {detail}" if detail and not condition else ""))
    if not condition:
        FAILURES.append(what)


def wine_path(path):
    """A Linux path as a Windows program under Wine names it (drive Z: is /)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


class Env:
    def __init__(self, windows_bin, linux_build, source_dir, scratch):
        self.windows_bin = windows_bin
        self.linux_build = linux_build
        self.source_dir = source_dir
        self.scratch = scratch
        self.wine = os.environ.get("WINE", "/usr/lib/wine/wine64")
        self.env = dict(os.environ, WINEDEBUG="-all")
        self.env.setdefault("WINEPREFIX", os.path.join(scratch, "wineprefix"))

    def wine_run(self, exe, *args, timeout=120):
        return subprocess.run([self.wine, os.path.join(self.windows_bin, exe), *args],
                              capture_output=True, text=True, env=self.env, timeout=timeout)

    def wine_start(self, exe, *args):
        return subprocess.Popen([self.wine, os.path.join(self.windows_bin, exe), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env, start_new_session=True)

    def native(self, *args, timeout=60):
        return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def wait_for_line(log, pattern, proc, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                m = re.search(pattern, f.read())
            if m:
                return m
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    return None


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def validate_config(e):
    # The shipped configuration without its Linux state directory (each platform has its own
    # default), a broken one, and one whose state directory is not absolute on either.
    shipped = os.path.join(e.source_dir, "config", "wctmon.json")
    with open(shipped) as f:
        config = json.load(f)
    del config["state_dir"]
    good = os.path.join(e.scratch, "good.json")
    with open(good, "w") as f:
        json.dump(config, f, indent=2)
    bad = os.path.join(e.scratch, "bad.json")
    with open(bad, "w") as f:
        json.dump({"sampling": {"interval_ms": -5}, "targets": [{"name": "x"}]}, f)
    relative = os.path.join(e.scratch, "relative.json")
    with open(relative, "w") as f:
        json.dump(dict(config, state_dir="var/wctmon"), f)
    for name, path, want in (("the shipped config", good, 0), ("a bad config", bad, 1),
                             ("a relative state_dir", relative, 1)):
        native = e.native(os.path.join(e.linux_build, "service", "wctmon"), "validate-config", path)
        win = e.wine_run("wctmon.exe", "validate-config", wine_path(path))
        check(win.returncode == want == native.returncode,
              f"validate-config {name}: exit {want} on Linux and under Wine",
              f"linux {native.returncode} {native.stderr!r}; wine {win.returncode} {win.stderr!r}")
        # The same lines, the file named each platform's way.
        same = (win.stdout + win.stderr).replace(wine_path(path), path).replace("\r\n", "\n")
        check(same == native.stdout + native.stderr,
              f"validate-config {name}: the same report as Linux",
              f"linux {native.stdout + native.stderr!r}\n     wine  {same!r}")


def linux_paths_are_not_windows_paths(e):
    # "/var/lib/wctmon" is absolute on Linux only: on Windows it would be on whatever drive is
    # current, so it is refused there with the same reason as a relative path.
    shipped = os.path.join(e.source_dir, "config", "wctmon.json")
    win = e.wine_run("wctmon.exe", "validate-config", wine_path(shipped))
    check(win.returncode == 1 and '/state_dir: must be an absolute path (got "/var/lib/wctmon")'
          in win.stderr, "the Linux config's /var/lib/wctmon is refused on Windows, with why",
          f"exit {win.returncode} {win.stderr!r}")


def analyze_unsupported(e):
    # A Wine process to analyse: a fixture that waits.
    fixture = e.wine_start("wctmon-wct-fixture.exe", "idle", "2")
    try:
        ready = fixture.stdout.readline().split()
        check(len(ready) >= 2 and ready[0] == "ready", "the fixture runs under Wine", repr(ready))
        pid = ready[1] if len(ready) > 1 else "1"
        t0 = time.time()
        r = e.wine_run("wctmon.exe", "analyze", "--pid", pid)
        elapsed = time.time() - t0
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(r.returncode == 1, "wctmon.exe analyze exits 1 where WCT is not supported",
              f"exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
        check(len(lines) == 1 and "not supported" in lines[0] and lines[0].startswith("wctmon: "),
              "wctmon.exe analyze says so in one line", repr(r.stderr))
        print(f"     (analyze under Wine: {elapsed * 1000:.0f} ms)")
    finally:
        stop(fixture)


def dump_under_wine(e):
    fixture = e.wine_start("wctmon-wct-fixture.exe", "cs-abba")
    try:
        ready = fixture.stdout.readline().split()
        check(len(ready) >= 2 and ready[0] == "ready", "the critical-section fixture runs", repr(ready))
        pid = ready[1] if len(ready) > 1 else "1"
        dump = os.path.join(e.scratch, "cs-abba.dmp")
        t0 = time.time()
        r = e.wine_run("wctmon.exe", "dump", "--pid", pid, "--out", wine_path(dump))
        elapsed = time.time() - t0
        check(r.returncode == 0 and "minidump" in r.stdout,
              "wctmon.exe dump writes a minidump of a Wine process",
              f"exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
        print(f"     (dump under Wine: {elapsed * 1000:.0f} ms)")
        magic = b""
        if os.path.exists(dump):
            with open(dump, "rb") as f:
                magic = f.read(4)
        check(magic == b"MDMP", "the file is a minidump", repr(magic))
        check(os.path.exists(dump + ".json"), "the diagnosis is beside it")
        info = e.native(os.path.join(e.linux_build, "service", "wctmon"), "dump", "info", dump)
        check(info.returncode == 0 and "not supported" in info.stdout,
              "the native wctmon reads the diagnosis from the minidump's user stream",
              f"exit {info.returncode}, stdout {info.stdout!r}, stderr {info.stderr!r}")
        lldb = e.native("lldb", "--batch", "-c", dump, "-o", "thread list", timeout=120)
        threads = re.findall(r"thread #\d+: tid = (?:0x)?[0-9a-f]+", lldb.stdout)
        check(len(threads) >= 3, "lldb opens the minidump and lists the process's threads",
              lldb.stdout[-2000:] + lldb.stderr[-1000:])
    finally:
        stop(fixture)


def status_of(r, asked, platform, said):
    """The status a `wctctl status -o json` run printed, checked to succeed (`asked`) and to come
    from a service of `platform` (`said`); None when the call failed."""
    check(r.returncode == 0, asked, r.stdout + r.stderr)
    if r.returncode != 0:
        return None
    status = json.loads(r.stdout)
    check(status.get("platform", "").startswith(platform), said, r.stdout)
    return status


def write_config(path, state_dir, api, metrics):
    with open(path, "w") as f:
        json.dump({"state_dir": state_dir, "sampling": {"interval_ms": 1000},
                   "alerts": {"sink": "none"},
                   "log": {"level": "info", "console": False, "file": "wctmon.log"},
                   "api": {"listen": [api]}, "metrics": {"listen": metrics},
                   "targets": []}, f)


def windows_client_to_linux_service(e):
    state = os.path.join(e.scratch, "linux-state")
    os.makedirs(state)
    config = os.path.join(state, "wctmon.json")
    write_config(config, state, "127.0.0.1:0", "127.0.0.1:0")
    service = subprocess.Popen([os.path.join(e.linux_build, "service", "wctmond"), "--config",
                                config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        m = wait_for_line(os.path.join(state, "wctmon.log"), r"API listening on 127\.0\.0\.1:(\d+)",
                          service)
        check(m is not None, "the Linux service listens on loopback")
        if m is None:
            return
        r = e.wine_run("wctctl.exe", "status", "-o", "json", "--server", "127.0.0.1:" + m[1],
                       "--token-file", wine_path(os.path.join(state, "api-reader.token")))
        status_of(r, "wctctl.exe status under Wine asks the Linux service", "linux",
                  "and reads the Linux service's status")
    finally:
        stop(service)


def linux_client_to_windows_service(e):
    state = os.path.join(e.scratch, "windows-state")
    os.makedirs(state)
    config = os.path.join(state, "wctmon.json")
    write_config(config, wine_path(state), "127.0.0.1:0", "127.0.0.1:0")
    t0 = time.time()
    service = e.wine_start("wctmond.exe", "--config", wine_path(config))
    try:
        log = os.path.join(state, "wctmon.log")
        m = wait_for_line(log, r"API listening on 127\.0\.0\.1:(\d+)", service)
        check(m is not None, "wctmond.exe runs in the foreground under Wine and serves the API",
              open(log).read() if os.path.exists(log) else service.stderr.read()
              if service.poll() is not None else "no log")
        if m is None:
            return
        print(f"     (wctmond.exe listening after {time.time() - t0:.1f} s)")
        wctctl = os.path.join(e.linux_build, "client", "wctctl")
        token = os.path.join(state, "api-reader.token")
        r = e.native(wctctl, "status", "-o", "json", "--server", "127.0.0.1:" + m[1],
                     "--token-file", token)
        status = status_of(r, "the Linux wctctl asks wctmond.exe", "windows",
                           "wctmond.exe says it is the Windows build")
        if status is not None:
            source = status.get("source", {})
            check(source.get("name") == "windows-wct" and not source.get("available", False)
                  and "not supported" in source.get("reason", ""),
                  "and that WCT is unavailable here, and why", json.dumps(source))
        r = e.native(wctctl, "health", "--server", "127.0.0.1:" + m[1])
        check(r.returncode == 0, "its gRPC health service answers", r.stdout + r.stderr)
    finally:
        stop(service)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    windows_bin, linux_build, source_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="wctmon-interop-") as scratch:
        e = Env(windows_bin, linux_build, source_dir, scratch)
        for step in (validate_config, linux_paths_are_not_windows_paths, analyze_unsupported,
                     dump_under_wine, windows_client_to_linux_service,
                     linux_client_to_windows_service):
            step(e)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
