#!/usr/bin/env python3
"""The Windows executables under Wine, next to the native Linux ones:

1. wctmon.exe validate-config accepts and rejects files as the Linux wctmon does (same lines,
   same exit codes), and refuses the Linux config's /var/lib/wctmon, not absolute on Windows;
2. wctmon.exe analyze --pid <a Wine process> exits 1 with one line saying WCT is not supported
   here (Wine's OpenThreadWaitChainSession is a stub);
3. wctmon.exe dump writes a minidump of a Wine process deadlocked on two critical sections, with
   its diagnosis (here: why WCT could not tell) in a user stream that the native `wctmon dump
   info` reads back, and lldb opens it with the process's threads;
4. wctmon.exe (64-bit) dumps a 32-bit (WOW64) process deadlocked on two critical sections (the
   i686 build of the fixture, run by Wine's 32-bit half, wine32): the minidump holds that
   process's threads and 32-bit modules, the native `wctmon dump info` reads its diagnosis, and
   lldb lists its threads and modules;
5. wctctl.exe status under Wine asks the native Linux wctmond over loopback;
6. the native wctctl asks wctmond.exe, running in the foreground under Wine, over loopback: it
   runs, serves the API, and says that its wait-chain source (WCT) is unavailable and why.

Usage: windows_interop.py WINDOWS_BIN_DIR LINUX_BUILD_DIR SOURCE_DIR
Environment: WINE (default /usr/lib/wine/wine64), WINEPREFIX (a prefix of the test's own when
unset)."""
import json
import os
import re
import signal
import struct
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


def dump_with_wctmon_exe(e, pid, dump, what, timed):
    """wctmon.exe dump of `pid` into `dump`, checked as `what`; prints how long it took."""
    t0 = time.time()
    r = e.wine_run("wctmon.exe", "dump", "--pid", pid, "--out", wine_path(dump))
    elapsed = time.time() - t0
    check(r.returncode == 0 and "minidump" in r.stdout, what,
          f"exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
    print(f"     ({timed}: {elapsed * 1000:.0f} ms)")


def dump_under_wine(e):
    fixture = e.wine_start("wctmon-wct-fixture.exe", "cs-abba")
    try:
        ready = fixture.stdout.readline().split()
        check(len(ready) >= 2 and ready[0] == "ready", "the critical-section fixture runs", repr(ready))
        pid = ready[1] if len(ready) > 1 else "1"
        dump = os.path.join(e.scratch, "cs-abba.dmp")
        dump_with_wctmon_exe(e, pid, dump, "wctmon.exe dump writes a minidump of a Wine process",
                             "dump under Wine")
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


class Minidump:
    """The streams of a minidump this test asserts on: system information, threads (with each
    one's context: the AMD64 CONTEXT record of a 64-bit writer) and modules."""

    SYSTEM_INFO, THREAD_LIST, MODULE_LIST = 7, 3, 4

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = d = f.read()
        magic, _version, count, rva = struct.unpack_from("<4sIII", d, 0)
        if magic != b"MDMP":
            raise ValueError(f"not a minidump: {magic!r}")
        self.streams = {}
        for i in range(count):
            kind, _size, at = struct.unpack_from("<III", d, rva + 12 * i)
            self.streams.setdefault(kind, at)
        self.architecture = None
        if self.SYSTEM_INFO in self.streams:
            self.architecture = struct.unpack_from("<H", d, self.streams[self.SYSTEM_INFO])[0]
        self.threads = {}
        if self.THREAD_LIST in self.streams:
            at = self.streams[self.THREAD_LIST]
            for j in range(struct.unpack_from("<I", d, at)[0]):
                (tid, _suspend, _class, _prio, _teb, stack_start, stack_size, _stack_rva,
                 _ctx_size, ctx) = struct.unpack_from("<IIIIQQIIII", d, at + 4 + 48 * j)
                self.threads[tid] = {
                    "stack": (stack_start, stack_start + stack_size),
                    "cs": struct.unpack_from("<H", d, ctx + 0x38)[0],
                    "sp": struct.unpack_from("<Q", d, ctx + 0x98)[0],
                    "pc": struct.unpack_from("<Q", d, ctx + 0xF8)[0]}
        self.modules = []
        if self.MODULE_LIST in self.streams:
            at = self.streams[self.MODULE_LIST]
            for j in range(struct.unpack_from("<I", d, at)[0]):
                base, size, _sum, _stamp, name_rva = struct.unpack_from("<QIIII", d, at + 4 + 108 * j)
                length = struct.unpack_from("<I", d, name_rva)[0]
                name = d[name_rva + 4:name_rva + 4 + length].decode("utf-16-le")
                self.modules.append((name, base, size))


PROCESSOR_ARCHITECTURE_AMD64 = 9
X86_CODE_SELECTOR = 0x23  # the 32-bit code segment of a WOW64 thread (0x33 is 64-bit code)


def dump_32bit_process(e):
    fixture32 = os.path.join(e.windows_bin, "wctmon-wct-fixture32.exe")
    with open(fixture32, "rb") as f:
        pe = f.read(4096)
    machine = struct.unpack_from("<H", pe, struct.unpack_from("<I", pe, 0x3C)[0] + 4)[0]
    check(machine == 0x14C, "the 32-bit fixture is an i386 program", hex(machine))
    fixture = e.wine_start("wctmon-wct-fixture32.exe", "cs-abba")
    try:
        ready = fixture.stdout.readline().split()
        check(len(ready) == 4 and ready[0] == "ready",
              "the 32-bit critical-section fixture runs under Wine (wine32)",
              repr(ready) + " " + (fixture.stderr.read() if fixture.poll() is not None else ""))
        if len(ready) != 4:
            return
        pid, blocked = ready[1], [int(t) for t in ready[2:]]
        dump = os.path.join(e.scratch, "cs-abba-x86.dmp")
        dump_with_wctmon_exe(e, pid, dump, "wctmon.exe (64-bit) dumps the 32-bit process",
                             "dump of the 32-bit process under Wine")
        try:
            md = Minidump(dump)
        except (OSError, ValueError, struct.error) as error:
            check(False, "the file is a minidump", str(error))
            return
        # A 64-bit writer's dump of a WOW64 process is a 64-bit dump, on Windows as here:
        # debuggers show its 32-bit view on request (WinDbg's .effmach x86).
        check(md.architecture == PROCESSOR_ARCHITECTURE_AMD64,
              "its system information is the writer's, AMD64", repr(md.architecture))
        check(bool(md.modules) and md.modules[0][0].endswith("wctmon-wct-fixture32.exe"),
              "its first module is the 32-bit fixture", repr(md.modules[:1]))
        check(bool(md.modules) and all(b + s <= 1 << 32 for _, b, s in md.modules),
              "every module lies below 4 GiB, as in a 32-bit process",
              repr([(n, hex(b)) for n, b, _ in md.modules if b + _ > 1 << 32]))
        check(set(blocked) <= set(md.threads) and len(md.threads) >= 3,
              "its threads are the process's, the two deadlocked ones among them",
              f"dump {sorted(md.threads)}, blocked {blocked}")
        # Under Wine a thread of a 32-bit process runs 32-bit code throughout: its record holds
        # the x86 registers (cs 0x23, eip and esp zero-extended) where the thread waits.
        for tid in blocked:
            t = md.threads.get(tid)
            check(t is not None and t["cs"] == X86_CODE_SELECTOR and 0 < t["pc"] < 1 << 32
                  and 0 < t["sp"] < 1 << 32, f"thread {tid}'s context is 32-bit code",
                  repr(t and {k: (hex(v) if isinstance(v, int) else v) for k, v in t.items()}))
            # Wine's DbgHelp (8.0) records, for a thread of a 32-bit process, a stack range read
            # from the wrong bounds, one that does not hold esp: its 32-bit stack is not in the
            # dump, and a debugger cannot walk it. Told, not asserted.
            if t is not None and not t["stack"][0] <= t["sp"] < t["stack"][1]:
                print(f"     (note: thread {tid}'s recorded stack {t['stack'][0]:#x}-"
                      f"{t['stack'][1]:#x} does not hold its esp {t['sp']:#x})")
        info = e.native(os.path.join(e.linux_build, "service", "wctmon"), "dump", "info", dump)
        check(info.returncode == 0 and "not supported" in info.stdout,
              "the native wctmon reads the diagnosis from the 32-bit process's dump",
              f"exit {info.returncode}, stdout {info.stdout!r}, stderr {info.stderr!r}")
        lldb = e.native("lldb", "--batch", "-c", dump, "-o", "thread list", "-o", "image list",
                        timeout=120)
        listed = {int(t, 16): (int(pc, 16), module) for t, pc, module in
                  re.findall(r"thread #\d+: tid = 0x([0-9a-f]+), 0x([0-9a-f]+) (\S+)", lldb.stdout)}
        check(set(listed) == set(md.threads), "lldb lists the dump's threads",
              lldb.stdout[-2000:] + lldb.stderr[-1000:])
        check(all(listed.get(tid) == (md.threads[tid]["pc"], "ntdll.dll") for tid in blocked
                  if tid in md.threads),
              "each deadlocked thread in ntdll, at the pc the dump records", lldb.stdout[-2000:])
        check("wctmon-wct-fixture32.exe" in lldb.stdout and "ntdll.dll" in lldb.stdout,
              "and its modules, the 32-bit fixture's and ntdll among them", lldb.stdout[-2000:])
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
                     dump_under_wine, dump_32bit_process, windows_client_to_linux_service,
                     linux_client_to_windows_service):
            step(e)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
