#!/usr/bin/env python3
"""The MSI (scripts/windows/build-msi.sh), read with msiinfo and installed under Wine's msiexec in
a fresh prefix:

1. its tables: ServiceInstall, ServiceControl, the event source's Registry values, the
   CustomActions and where they run, Upgrade, the configuration's component (permanent, never
   overwritten), the PATH entry;
2. msiexec /i /qn: the files, the default configuration, the event source, the service RUNNING;
   the native Linux wctctl talks to it (platform windows, WCT unavailable under Wine and why); a
   target added with wctctl persists across a stop and a start; PARAMCHANGE reloads; a stop ends
   STOPPED with exit code 0 within its wait hint;
3. a newer version (MajorUpgrade), with the PATH feature chosen: one product installed, the
   configuration as the administrator left it, the store and its targets kept, the service
   running again, the directory on the system PATH;
4. msiexec /x: the service, the files, the event source and the PATH entry gone; the
   configuration and the store kept.
Prints the figures: the MSI's size, install -> RUNNING, stop -> STOPPED, upgrade, uninstall.

Usage: windows_msi.py WINDOWS_BIN_DIR LINUX_BUILD_DIR SOURCE_DIR MSI
Environment: WINE (default /usr/lib/wine/wine64)."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from wine_support import (EVENT_SOURCE_KEY, RUNNING_CONTROLS, Service, Wine, check, report,
                          status_json, tail, wait_until, wctctl)

API_PORT = 7787  # the shipped configuration's
UNINSTALL_KEY = r"HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall"
ENVIRONMENT_KEY = r"HKLM\System\CurrentControlSet\Control\Session Manager\Environment"


def table(msi, name):
    """The rows of an MSI table, as msiinfo exports them (three header lines, then tab-separated
    rows)."""
    # In a directory of its own: msiinfo writes the streams of a table (Binary) beside it.
    with tempfile.TemporaryDirectory() as where:
        r = subprocess.run(["msiinfo", "export", os.path.abspath(msi), name], capture_output=True,
                           text=True, cwd=where)
    return [line.split("\t") for line in r.stdout.splitlines()[3:]]


def check_tables(msi):
    services = {r[0]: r for r in table(msi, "ServiceInstall")}
    s = services.get("WctMon", [])
    check(len(s) >= 13 and s[1] == "WctMon" and s[3] == "16" and s[4] == "2" and s[5] == "1"
          and s[8] == "LocalSystem"
          and s[10] == '--config "[CommonAppDataFolder]wctmon\\wctmon.json"' and s[11] == "Service",
          "ServiceInstall: WctMon, own process, automatic, LocalSystem, the installed config",
          repr(s))
    controls = {r[0]: r for r in table(msi, "ServiceControl")}
    c = controls.get("WctMon", [])
    # 1 start on install + 2 stop on install + 32 stop on uninstall + 128 remove on uninstall.
    check(c[1:3] == ["WctMon", "163"] and c[4] == "1",
          "ServiceControl: start on install, stop on install and uninstall, remove, wait", repr(c))
    values = {r[3]: r for r in table(msi, "Registry")
              if r[2] == r"SYSTEM\CurrentControlSet\Services\EventLog\Application\wctmon"}
    check(values.get("EventMessageFile", [""] * 5)[4] == "#%[#wctmond.exe]"
          and values.get("CategoryMessageFile", [""] * 5)[4] == "#%[#wctmond.exe]"
          and values.get("CategoryCount", [""] * 5)[4] == "#4"
          and values.get("TypesSupported", [""] * 5)[4] == "#7"
          and all(v[1] == "2" for v in values.values()),
          "Registry: the event source in HKLM, wctmond.exe's message table (REG_EXPAND_SZ)",
          repr(values))
    actions = {r[0]: r for r in table(msi, "CustomAction")}
    # 18 (an installed exe) + 1024 (deferred) + 2048 (no impersonation) [+ 64 ignore result].
    check(actions.get("ConfigureService", [""] * 4)[1:4]
          == ["3090", "wctmond.exe",
              '--configure-service --config "[CommonAppDataFolder]wctmon\\wctmon.json"']
          and actions.get("RemoveServiceConfig", [""] * 4)[1:4]
          == ["3154", "wctmond.exe", "--remove-service-config"]
          and actions.get("PurgeState", [""] * 4)[1:4]
          == ["3154", "wctmond.exe", "--remove-service-config --purge"],
          "CustomAction: --configure-service, --remove-service-config (deferred, as LocalSystem)",
          repr(actions))
    check(actions.get("WaitForRelease", [""] * 4)[1:4]
          == ["3138", "ReleaseWait", '"[INSTALLDIR]wctmond.exe"']
          and any(r[0] == "ReleaseWait" for r in table(msi, "Binary")),
          "CustomAction: wctmon-release-wait.exe from the Binary table (deferred, as LocalSystem)",
          repr(actions.get("WaitForRelease")))
    sequence = {r[0]: (r[1], int(r[2])) for r in table(msi, "InstallExecuteSequence")}
    check(sequence["StopServices"][1] < sequence["WaitForRelease"][1]
          < sequence["RemoveFiles"][1] < sequence["InstallFiles"][1],
          "WaitForRelease runs after StopServices, before files are removed or replaced",
          repr(sequence))
    check(sequence["InstallServices"][1] < sequence["ConfigureService"][1]
          < sequence["StartServices"][1] and sequence["ConfigureService"][0] == 'NOT REMOVE="ALL"',
          "ConfigureService runs between InstallServices and StartServices", repr(sequence))
    check(all(sequence["StopServices"][1] < sequence[a][1] < sequence["DeleteServices"][1]
              and "NOT UPGRADINGPRODUCTCODE" in sequence[a][0]
              for a in ("RemoveServiceConfig", "PurgeState")),
          "RemoveServiceConfig runs on a removal that is not an upgrade's, before DeleteServices",
          repr(sequence))
    check(sequence["InstallServices"][1] < sequence["RemoveExistingProducts"][1]
          < sequence["InstallFinalize"][1],
          "an upgrade removes what the older version alone had, after installing (components "
          "shared by GUID stay)", repr(sequence))
    upgrade = table(msi, "Upgrade")
    check(any(r[6] == "WIX_UPGRADE_DETECTED" for r in upgrade)
          and any(r[6] == "WIX_DOWNGRADE_DETECTED" for r in upgrade),
          "Upgrade: older versions replaced, newer ones detected (downgrade refused)", repr(upgrade))
    components = {r[0]: r for r in table(msi, "Component")}
    check(components.get("Config", ["", "", "", ""])[3] == "400",
          "the configuration's component is 64-bit, permanent and never overwritten",
          repr(components.get("Config")))
    env = table(msi, "Environment")
    check(env == [["WctmonPath", "=-*Path", "[~];[INSTALLDIR]", "PathEntry"]],
          "Environment: the install directory appended to the system PATH (feature OnPath)",
          repr(env))
    files = {r[2].split("|")[-1] for r in table(msi, "File")}
    check({"wctmond.exe", "wctmon.exe", "wctctl.exe", "wctmon.json", "wctmon.rules.yml",
           "wctmon.rules.test.yml"} <= files,
          "File: wctmond.exe, wctmon.exe, wctctl.exe, wctmon.json, the rules and their tests",
          repr(files))


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def newer(version):
    major, minor, patch = (int(p) for p in version.split("."))
    return f"{major}.{minor}.{patch + 1}"


def products(wine):
    """The DisplayVersion of every installed wctmon."""
    r = wine.run("reg", "query", UNINSTALL_KEY, "/s")
    versions, name = [], None
    for line in r.stdout.splitlines():
        if line.startswith("HKEY_"):
            name = None
        m = re.match(r"\s+DisplayName\s+REG_SZ\s+(.*)", line)
        if m:
            name = m[1].strip()
        m = re.match(r"\s+DisplayVersion\s+REG_SZ\s+(.*)", line)
        if m and name == "wctmon":
            versions.append(m[1].strip())
    return versions


def system_path(wine):
    r = wine.run("reg", "query", ENVIRONMENT_KEY, "/v", "Path")
    return r.stdout


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    windows_bin, linux_build, source_dir, msi = sys.argv[1:5]
    version = re.search(r"wctmon-([0-9.]+)-x64\.msi$", msi)[1]
    print(f"     the MSI: {os.path.basename(msi)}, {os.path.getsize(msi) / 2**20:.1f} MiB")
    check_tables(msi)
    if not check(port_free(API_PORT) and port_free(API_PORT + 1),
                 f"ports {API_PORT} and {API_PORT + 1} (the shipped configuration's) are free here"):
        report()
    with tempfile.TemporaryDirectory(prefix="wctmon-msi-") as scratch:
        later = os.path.join(scratch, "later")
        r = subprocess.run([os.path.join(source_dir, "scripts", "windows", "build-msi.sh"),
                            windows_bin, newer(version), later], capture_output=True, text=True)
        check(r.returncode == 0, f"build-msi.sh makes version {newer(version)}", r.stderr)
        wine = Wine(scratch)
        wine.start()
        try:
            run(wine, windows_bin, linux_build, source_dir, msi, r.stdout.strip().splitlines()[-1])
        finally:
            wine.stop()
    report()


def run(wine, windows_bin, linux_build, source_dir, msi, later_msi):
    tools = wine.c_drive("wctmon-test")
    os.makedirs(tools)
    shutil.copy(os.path.join(windows_bin, "wctmon-scm-control.exe"), tools)
    for package in (msi, later_msi):
        shutil.copy(package, tools)
    scm = Service(wine, r"C:\wctmon-test\wctmon-scm-control.exe")
    program_files = wine.c_drive("Program Files", "wctmon")
    state = wine.c_drive("ProgramData", "wctmon")
    config_file = os.path.join(state, "wctmon.json")

    # Install.
    t0 = time.time()
    r = wine.run("msiexec", "/i", "C:\\wctmon-test\\" + os.path.basename(msi), "/qn", timeout=300)
    check(r.returncode == 0, "msiexec /i /qn", r.stdout + r.stderr)
    running = scm.ask("wait-running", "30000")
    install_to_running = time.time() - t0
    check(running.get("state") == 4 and running.get("controls") == RUNNING_CONTROLS,
          "the service WctMon is RUNNING", json.dumps(running))
    check(all(os.path.exists(os.path.join(program_files, f))
              for f in ("wctmond.exe", "wctmon.exe", "wctctl.exe")),
          "wctmond.exe, wctmon.exe and wctctl.exe under Program Files\\wctmon")
    for shipped_file, installed in (("installer/prometheus/wctmon.rules.yml",
                                     "prometheus/wctmon.rules.yml"),
                                    ("installer/grafana/wctmon.json", "grafana/wctmon.json")):
        with open(os.path.join(source_dir, shipped_file), "rb") as f:
            source = f.read()
        path = os.path.join(program_files, *installed.split("/"))
        check(os.path.exists(path) and open(path, "rb").read() == source,
              f"{installed} under Program Files\\wctmon", path)
    with open(os.path.join(source_dir, "config", "wctmon.windows.json")) as f:
        shipped = f.read()
    check(os.path.exists(config_file) and open(config_file).read() == shipped,
          "the default configuration in ProgramData\\wctmon\\wctmon.json")
    r = wine.run("reg", "query", EVENT_SOURCE_KEY)
    check(r.returncode == 0 and "EventMessageFile" in r.stdout and "REG_EXPAND_SZ" in r.stdout
          and "wctmond.exe" in r.stdout, "the event source is registered", r.stdout + r.stderr)
    check("Program Files\\wctmon" not in system_path(wine),
          "the PATH feature is not installed unless chosen", system_path(wine))
    versions = products(wine)
    check(len(versions) == 1, "one product installed", repr(versions))

    reader = os.path.join(state, "api-reader.token")
    admin = os.path.join(state, "api-admin.token")
    st = wait_until(lambda: status_json(linux_build, API_PORT, reader), 30)
    if not check(st is not None, "the Linux wctctl reads its status on 127.0.0.1:7787",
                 wctctl(linux_build, API_PORT, reader, "status").stderr + tail(
                     os.path.join(state, "wctmon.log"))):
        return
    source = st.get("source", {})
    check(st.get("platform") == "windows" and source.get("name") == "windows-wct"
          and not source.get("available", True) and "not supported" in source.get("reason", ""),
          "platform windows; WCT unavailable under Wine, and why", json.dumps(st))
    r = wctctl(linux_build, API_PORT, admin, "targets", "add", "--name", "scm", "--exe",
               "services.exe")
    check(r.returncode == 0, "wctctl targets add", r.stdout + r.stderr)

    config = json.loads(shipped)
    config["log"]["level"] = "debug"
    with open(config_file, "w") as f:
        json.dump(config, f, indent=2)
    scm.ask("paramchange")
    log = os.path.join(state, "wctmon.log")
    check(wait_until(lambda: re.search(r"configuration reloaded from .*: applied log\.level",
                                       tail(log, 100000)), 10) is not None,
          "PARAMCHANGE reloads the configuration", tail(log))

    t0 = time.time()
    stopping = scm.ask("stop")
    stopped = scm.ask("wait-stopped", "30000")
    stop_to_stopped = time.time() - t0
    check(stopped.get("state") == 1 and stopped.get("win32_exit") == 0
          and stopped.get("service_exit") == 0 and stop_to_stopped * 1000 < 5000,
          f"sc stop: STOPPED with exit code 0 within the 5 s wait hint "
          f"({stop_to_stopped * 1000:.0f} ms)", json.dumps([stopping, stopped]))
    scm.ask("start")
    scm.ask("wait-running", "30000")
    listed = wait_until(lambda: (r := wctctl(linux_build, API_PORT, reader, "targets", "list",
                                             "-o", "json")).returncode == 0 and r.stdout, 30)
    check(listed is not None and "services.exe" in listed,
          "the target added with wctctl is there after a stop and a start", listed or "")

    # Upgrade, with the PATH feature.
    t0 = time.time()
    r = wine.run("msiexec", "/i", "C:\\wctmon-test\\" + os.path.basename(later_msi), "/qn",
                 "ADDLOCAL=Main,OnPath", timeout=300)
    running = scm.ask("wait-running", "30000")
    upgrade_time = time.time() - t0
    check(r.returncode == 0 and running.get("state") == 4,
          "a newer version installs over it (MajorUpgrade) and the service runs again",
          r.stdout + r.stderr + json.dumps(running))
    versions = products(wine)
    check(versions == [re.search(r"wctmon-([0-9.]+)-x64\.msi$", later_msi)[1]],
          "one product installed: the newer", repr(versions))
    check(json.load(open(config_file))["log"]["level"] == "debug",
          "the configuration as the administrator left it")
    listed = wait_until(lambda: (r := wctctl(linux_build, API_PORT, reader, "targets", "list",
                                             "-o", "json")).returncode == 0 and r.stdout, 30)
    check(listed is not None and "services.exe" in listed, "the store and its targets kept",
          listed or "")
    check("Program Files\\wctmon" in system_path(wine),
          "the install directory is on the system PATH (feature OnPath)", system_path(wine))
    r = wine.run("reg", "query", EVENT_SOURCE_KEY)
    check(r.returncode == 0 and "EventMessageFile" in r.stdout,
          "the event source is still registered (the older version's removal left it)",
          r.stdout + r.stderr)

    # Uninstall.
    t0 = time.time()
    r = wine.run("msiexec", "/x", "C:\\wctmon-test\\" + os.path.basename(later_msi), "/qn",
                 timeout=300)
    uninstall_time = time.time() - t0
    check(r.returncode == 0, "msiexec /x /qn", r.stdout + r.stderr)
    gone = scm.ask("query")
    check(gone.get("error") == "OpenServiceW" and gone.get("code") == 1060,
          "the service is removed", json.dumps(gone))
    check(not any(os.path.exists(os.path.join(program_files, f))
                  for f in ("wctmond.exe", "wctmon.exe", "wctctl.exe")), "the files are removed")
    check(wine.run("reg", "query", EVENT_SOURCE_KEY).returncode != 0,
          "the event source is removed")
    check("Program Files\\wctmon" not in system_path(wine), "the PATH entry is removed",
          system_path(wine))
    check(os.path.exists(config_file) and os.path.exists(os.path.join(state, "incidents.db")),
          "the configuration and the store are kept")
    check(products(wine) == [], "no product left", repr(products(wine)))

    print(f"     figures: install -> RUNNING {install_to_running * 1000:.0f} ms, "
          f"stop -> STOPPED {stop_to_stopped * 1000:.0f} ms, "
          f"upgrade -> RUNNING {upgrade_time * 1000:.0f} ms, uninstall {uninstall_time * 1000:.0f} ms")


if __name__ == "__main__":
    main()
