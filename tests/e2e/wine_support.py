"""What the Windows service's tests under Wine share: a prefix of the test's own kept alive
(Wine stops its services when no other Wine program runs), the SCM as wctmon-scm-control asks
it, the native Linux wctctl, and the test's checks."""
import json
import os
import socket
import subprocess
import tempfile
import time

FAILURES = []
SERVICE = "WctMon"
EVENT_SOURCE_KEY = r"HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\wctmon"
RUNNING_CONTROLS = 0x1 | 0x4 | 0x8 | 0x100  # STOP, SHUTDOWN, PARAMCHANGE, PRESHUTDOWN


def check(condition, what, detail=""):
    print(("ok   " if condition else "FAIL ") + what + (f"\n     {detail}" if detail and not condition else ""))
    if not condition:
        FAILURES.append(what)
    return condition


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Wine:
    """A prefix of the test's own, kept alive by one waiting program: Wine stops its services
    when no other Wine program runs."""

    def __init__(self, scratch):
        self.wine = os.environ.get("WINE", "/usr/lib/wine/wine64")
        self.wineserver = os.path.join(os.path.dirname(self.wine), "wineserver")
        self.prefix = os.path.join(scratch, "wineprefix")
        self.env = dict(os.environ, WINEPREFIX=self.prefix, WINEDEBUG="-all")
        self.keeper = None

    def start(self, windows=False):
        """`windows`: programs of the test make windows; they need a graphics driver, and the
        test no screen: Wine's null driver, read by the desktop when the test's session starts."""
        quiet = dict(env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
        subprocess.run([self.wine, "wineboot", "--init"], timeout=180, **quiet)
        if windows:
            subprocess.run([self.wine, "reg", "add", r"HKCU\Software\Wine\Drivers", "/v",
                            "Graphics", "/d", "null", "/f"], timeout=120, **quiet)
        # The prefix's first session ends before the test's begins: a service created while
        # the services of the first one still run is not known to the next one's (OpenService
        # then fails with 1060, StartService with 1055).
        subprocess.run([self.wineserver, "-w"], env=self.env, timeout=120)
        # The test's server, started here with its output nowhere: a server that a program of
        # the test started would hold that program's output open for as long as it lives.
        subprocess.run([self.wineserver, "-p"], timeout=60, **quiet)
        # cmd's pause waits on a pipe that never closes.
        self.keeper = subprocess.Popen([self.wine, "cmd", "/c", "pause"], env=self.env,
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)

    def stop(self):
        subprocess.run([self.wineserver, "-k"], env=self.env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if self.keeper is not None:
            self.keeper.stdin.close()
            try:
                self.keeper.wait(10)
            except subprocess.TimeoutExpired:
                self.keeper.kill()

    def c_drive(self, *parts):
        return os.path.join(self.prefix, "drive_c", *parts)

    def run(self, *args, timeout=120):
        """Runs a program to its end. Its output goes through files, not pipes: a process it
        starts that lives on (a service, a custom action server) cannot hold the test up."""
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            r = subprocess.run([self.wine, *args], stdout=out, stderr=err, text=True,
                               env=self.env, stdin=subprocess.DEVNULL, timeout=timeout)
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(r.args, r.returncode, out.read(), err.read())


class Service:
    """The SCM as wctmon-scm-control asks it (Wine's sc.exe has no `control` nor `config`)."""

    def __init__(self, wine, control_exe):
        self.wine = wine
        self.control_exe = control_exe

    def ask(self, verb, *args):
        r = self.wine.run(self.control_exe, SERVICE, verb, *args)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return {"error": r.stdout + r.stderr, "rc": r.returncode}


def wctctl(linux_build, port, token, *args):
    return subprocess.run([os.path.join(linux_build, "client", "wctctl"), *args, "--server",
                           f"127.0.0.1:{port}", "--token-file", token],
                          capture_output=True, text=True, timeout=60)


def status_json(linux_build, port, token):
    r = wctctl(linux_build, port, token, "status", "-o", "json")
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return None


def tail(path, size=2000):
    if not os.path.exists(path):
        return f"({path} does not exist)"
    with open(path, errors="replace") as f:
        return f.read()[-size:]


def wait_until(predicate, timeout, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


def report():
    """Exits 1 when a check failed."""
    if FAILURES:
        print(f"\n{len(FAILURES)} check(s) failed")
        raise SystemExit(1)
