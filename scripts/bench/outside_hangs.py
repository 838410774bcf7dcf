#!/usr/bin/env python3
"""Benchmarks the incidents of hangs that are not cycles (issue 25), on real programs:

1. detection time against its threshold, over --runs programs (a fresh one each run) watched by
   one service:
   - unresponsive: a ThreadingHTTPServer whose handlers all start waiting on a condition nobody
     signals (SIGUSR1), probed over HTTP every 1000 ms (500 ms timeout, 3 failures): from the
     moment its handlers start blocking to the incident in the store, against interval x
     failures;
   - stall: a lost wakeup (a worker waits on a condition nobody signals, the main thread joins
     it) with hang_threshold_ms 5000: from the moment its last thread blocks to the incident in
     the store, against the threshold;
   - busy: a C program whose worker thread starts spinning in one function ("spin" on stdin),
     with busy.threshold_ms 10000 at 90 % of a core: from the moment it starts to the incident
     in the store, against the threshold (the two 1 s profile windows come on top);
   and, for each, the time from the release (SIGUSR2 / SIGUSR1 / "stop") to the incident
   resolved. Each kind is a Scenario, one class in SCENARIOS.
2. the cost of probes: --targets targets, each selecting one HTTP server of its own (one
   python3 http.server process per target, on its own port) by its command line, probed over
   HTTP every 1000 ms: the service's CPU % of one core (utime + stime from /proc/PID/stat over
   --seconds) and RSS, median of --rounds, against the same targets without probes, the two
   interleaved in one run on the same server processes, and one target selecting them all
   (what the number of targets costs, probes aside).
3. the cost of busy detection: --busy-processes idle C processes (two threads each) watched by
   one target, busy detection off against on, and on with --busy-spinning of them spinning
   (profiled, their incident open), interleaved the same way.

Prints a table and writes the figures as JSON to --out (build/bench/outside_hangs.json)."""
import argparse
import ctypes
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from service import accepts, proc_cpu_seconds, proc_status, stop  # noqa: E402

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_TGKILL = {"x86_64": 234, "aarch64": 131}.get(os.uname().machine, 234)


def signal_main_thread(pid, sig):
    """tgkill to the main thread itself: CPython runs its handlers there, and a signal the kernel
    gives another thread would not wake the main thread from a lock wait."""
    if _libc.syscall(_SYS_TGKILL, pid, pid, sig) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill {pid}")


def free_ports(n):
    """`n` distinct ports nobody listens on now (all bound at once, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def percentile(samples, q):
    """Nearest rank: of 20 samples, p99 is the largest."""
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def summary(samples):
    if not samples:
        return {"n": 0}
    return {"n": len(samples), "median_ms": round(statistics.median(samples)),
            "p99_ms": round(percentile(samples, 0.99)), "min_ms": round(min(samples)),
            "max_ms": round(max(samples))}


# ---------------------------------------------------------------------------------------------
# The service


class ServiceGone(RuntimeError):
    """The service exited under a run: on a shared machine something else may stop it."""


class Service:
    """`wctmon run` on a configuration of its own in a temporary state_dir, its store read
    directly (read-only) as scripts/bench/service.py does."""

    def __init__(self, wctmon, targets, interval_ms=1000, metrics=False, log_level="warn",
                 capture=None, detection=None):
        self.wctmon = wctmon
        self.state = tempfile.mkdtemp(prefix="wctmon-outside-")
        self.config = os.path.join(self.state, "wctmon.json")
        self.log = os.path.join(self.state, "wctmon.log")
        self.metrics = f"127.0.0.1:{free_ports(1)[0]}" if metrics else None
        config = {
            "state_dir": self.state,
            # Its own API socket and metrics address: the defaults are for one service per host.
            "api": {"listen": ["unix:" + os.path.join(self.state, "api.sock")]},
            "metrics": {"listen": self.metrics} if metrics else {"enabled": False},
            "sampling": {"interval_ms": interval_ms},
            "alerts": {"sink": "none"},
            "log": {"level": log_level, "console": False, "file": "wctmon.log"},  # under state_dir
            # No dumps unless asked: their writing is not what is measured.
            "capture": capture if capture is not None else {"dump": "none"},
            "targets": targets,
        }
        if detection is not None:
            config["detection"] = detection
        with open(self.config, "w") as f:
            json.dump(config, f, indent=1)
        check = subprocess.run([wctmon, "validate-config", self.config], capture_output=True,
                               text=True)
        if check.returncode != 0:
            sys.exit(f"configuration refused: {check.stdout}{check.stderr}")
        self.proc = subprocess.Popen([wctmon, "run", "--config", self.config],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        db = os.path.join(self.state, "incidents.db")
        deadline = time.time() + 20
        while not os.path.exists(db):
            if time.time() > deadline or self.proc.poll() is not None:
                sys.exit(f"the service did not start:\n{self.log_tail()}")
            time.sleep(0.05)
        self.db = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    def log_tail(self, lines=30):
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def query(self, sql, params=()):
        for _ in range(50):
            try:
                return self.db.execute(sql, params).fetchall()
            except sqlite3.OperationalError:  # locked for a moment by a write
                time.sleep(0.005)
        return self.db.execute(sql, params).fetchall()

    def wait_for(self, sql, params, timeout, poll=0.005):
        """The first row of `sql` and the wall time it was seen, or (None, None) past
        `timeout` s. ServiceGone when the service exits meanwhile."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            rows = self.query(sql, params)
            if rows:
                return rows[0], time.time()
            self.check_alive()
            time.sleep(poll)
        return None, None

    def check_alive(self):
        if self.proc.poll() is not None:
            raise ServiceGone(f"the service (pid {self.pid}) exited with {self.proc.returncode};"
                              f" its log ends:\n{self.log_tail(5)}")

    def counts_by_kind(self):
        return dict(self.query("SELECT kind, COUNT(*) FROM incidents GROUP BY kind"))

    def incidents_json(self):
        """`wctmon incidents --json`: every incident listed (no chains)."""
        r = subprocess.run([self.wctmon, "incidents", "--config", self.config, "--json"],
                           capture_output=True, text=True)
        return json.loads(r.stdout).get("incidents", []) if r.returncode == 0 else []

    def incident_json(self, incident_id):
        """One incident whole (chains, evidence)."""
        r = subprocess.run([self.wctmon, "incidents", "--config", self.config, "--id",
                            str(incident_id), "--json"], capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def scrape(self):
        if not self.metrics:
            return ""
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as r:
            return r.read().decode()

    def cpu_seconds(self):
        return proc_cpu_seconds(self.pid)

    def rss_mb(self):
        return proc_status(self.pid, "VmRSS") / 1024

    def hwm_mb(self):
        return proc_status(self.pid, "VmHWM") / 1024

    def close(self, keep=False):
        stop(self.proc)
        self.db.close()
        if not keep:
            subprocess.run(["rm", "-rf", self.state])


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


# ---------------------------------------------------------------------------------------------
# The programs

# A ThreadingHTTPServer on argv[1]: SIGUSR1 makes every later request wait on a condition nobody
# signals; SIGUSR2 signals it and requests are answered again. Each handler prints the moment it
# ran: the moment the hang begins and ends, on the host's clock.
HTTP_SERVER = r"""
import http.server, json, os, signal, sys, threading, time
hang = threading.Event()
cond = threading.Condition()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if hang.is_set():
            with cond:
                cond.wait()
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
def block(*args):
    hang.set()
    print(json.dumps({"hung": time.time()}), flush=True)
def release(*args):
    hang.clear()
    with cond:
        cond.notify_all()
    print(json.dumps({"released": time.time()}), flush=True)
signal.signal(signal.SIGUSR1, block)
signal.signal(signal.SIGUSR2, release)
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(json.dumps({"pid": os.getpid()}), flush=True)
server.serve_forever()
"""

# A lost wakeup on "go" (stdin): a worker waits on a condition nobody signals and the main thread
# joins it; it prints the moment just before the join, the last of its threads to block. SIGUSR1
# (run by the main thread) signals the condition; then it sleeps, which is no stall.
LOST_WAKEUP = r"""
import json, os, signal, sys, threading, time
cond = threading.Condition()
waiting = threading.Event()
def worker():
    with cond:
        waiting.set()
        cond.wait()
def wake(*args):
    with cond:
        cond.notify_all()
    print(json.dumps({"released": time.time()}), flush=True)
signal.signal(signal.SIGUSR1, wake)
print(json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
t = threading.Thread(target=worker)
t.start()
waiting.wait()
with cond:  # the worker has released it: it is in its wait
    pass
print(json.dumps({"blocked": time.time()}), flush=True)
t.join()
time.sleep(3600)
"""


# A thread ("worker") that spins in one function of its own while told to: "spin" on stdin starts
# it (the moment printed), "stop" ends it (the moment printed); between the two it waits on a
# condition. The main thread reads stdin (a wait on a pipe, which the process cannot end itself).
# In C, so that the spin is one function: CPython's loop spreads over its interpreter's functions.
SPINNER_C = r"""
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
static atomic_int spinning;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t told = PTHREAD_COND_INITIALIZER;
static double now(void) {
  struct timeval tv;
  gettimeofday(&tv, 0);
  return tv.tv_sec + tv.tv_usec / 1e6;
}
__attribute__((noinline)) static void spin_in_place(void) {
  while (atomic_load(&spinning)) {
  }
}
static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (!atomic_load(&spinning)) pthread_cond_wait(&told, &lock);
    pthread_mutex_unlock(&lock);
    spin_in_place();
  }
  return 0;
}
int main(void) {
  pthread_t t;
  pthread_create(&t, 0, worker, 0);
  printf("{\"pid\": %d}\n", getpid());
  fflush(stdout);
  char line[32];
  while (fgets(line, sizeof line, stdin)) {
    pthread_mutex_lock(&lock);
    atomic_store(&spinning, strncmp(line, "spin", 4) == 0);
    pthread_cond_signal(&told);
    pthread_mutex_unlock(&lock);
    printf("{\"%s\": %.6f}\n", atomic_load(&spinning) ? "spinning" : "released", now());
    fflush(stdout);
  }
  return 0;
}
"""

_spinner = None


def spinner_binary():
    """The spinner, compiled once per run into a temporary directory."""
    global _spinner
    if _spinner is None:
        out = os.path.join(tempfile.mkdtemp(prefix="wctmon-spinner-"), "spinner")
        subprocess.run(["cc", "-O1", "-g", "-pthread", "-x", "c", "-", "-o", out],
                       input=SPINNER_C.encode(), check=True)
        _spinner = out
    return _spinner


def spawn_spinner(*args):
    proc = subprocess.Popen([spinner_binary(), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    proc.info = json.loads(proc.stdout.readline())
    return proc


def tell(proc, line):
    proc.stdin.write(line.encode() + b"\n")
    proc.stdin.flush()


def spawn(code, *args):
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    proc.info = json.loads(proc.stdout.readline())
    return proc


def read_event(proc, key, timeout=10):
    """The time the program printed for `key`."""
    import select
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0, deadline - time.time()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        event = json.loads(line)
        if key in event:
            return event[key]
    raise RuntimeError(f"pid {proc.pid} did not report {key!r}")


# ---------------------------------------------------------------------------------------------
# 1. Detection time


class Scenario:
    """One kind of incident: the target that watches its programs, the figure its detection
    time compares with, and how a fresh program is started, made to hang and released."""
    kind = ""  # as the store names it
    threshold_label = ""

    def __init__(self, args, tag):
        self.args = args
        self.tag = tag

    def target(self):
        raise NotImplementedError

    def expected_ms(self):
        raise NotImplementedError

    def start(self):
        raise NotImplementedError

    def hang(self, proc):
        """Makes it hang; returns the wall time its hang began."""
        raise NotImplementedError

    def release(self, proc):
        """Ends the hang; returns the wall time it ended."""
        raise NotImplementedError


class Unresponsive(Scenario):
    kind = "unresponsive"

    def __init__(self, args, tag):
        super().__init__(args, tag)
        self.port = free_ports(1)[0]
        self.threshold_label = (f"interval {args.probe_interval} ms x failures {args.failures} "
                                f"(timeout {args.probe_timeout} ms)")

    def target(self):
        return {"name": "unresponsive", "cmdline": self.tag,
                "probe": {"type": "http", "url": f"http://127.0.0.1:{self.port}/",
                          "interval_ms": self.args.probe_interval,
                          "timeout_ms": self.args.probe_timeout,
                          "failures": self.args.failures}}

    def expected_ms(self):
        return self.args.probe_interval * self.args.failures

    def start(self):
        # The same port each run (ThreadingHTTPServer binds with SO_REUSEADDR).
        return spawn(HTTP_SERVER, str(self.port), self.tag)

    def hang(self, proc):
        signal_main_thread(proc.pid, signal.SIGUSR1)
        return read_event(proc, "hung")

    def release(self, proc):
        signal_main_thread(proc.pid, signal.SIGUSR2)
        return read_event(proc, "released")


class Stall(Scenario):
    kind = "stall"

    def __init__(self, args, tag):
        super().__init__(args, tag)
        self.threshold_label = f"hang_threshold_ms {args.stall_threshold}"

    def target(self):
        return {"name": "stall", "cmdline": self.tag, "hang_threshold_ms": self.args.stall_threshold}

    def expected_ms(self):
        return self.args.stall_threshold

    def start(self):
        return spawn(LOST_WAKEUP, self.tag)

    def hang(self, proc):
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        return read_event(proc, "blocked")

    def release(self, proc):
        signal_main_thread(proc.pid, signal.SIGUSR1)
        return read_event(proc, "released")


class Busy(Scenario):
    kind = "busy"

    def __init__(self, args, tag):
        super().__init__(args, tag)
        self.threshold_label = (f"threshold_ms {args.busy_threshold} at {args.busy_cpu_percent} "
                                "% (+ 2 x 1 s profile)")

    def target(self):
        return {"name": "busy", "cmdline": self.tag,
                "busy": {"threshold_ms": self.args.busy_threshold,
                         "cpu_percent": self.args.busy_cpu_percent}}

    def expected_ms(self):
        return self.args.busy_threshold

    def start(self):
        return spawn_spinner(self.tag)

    def hang(self, proc):
        tell(proc, "spin")
        return read_event(proc, "spinning")

    def release(self, proc):
        tell(proc, "stop")
        return read_event(proc, "released")


SCENARIOS = {"unresponsive": Unresponsive, "stall": Stall, "busy": Busy}


def one_run(service, scenario, args, run):
    """One fresh program made to hang and released: (detected ms, detected ms by the incident's
    opened_at, resolved ms or None, the program's incidents by kind), or None when no incident
    opened."""
    proc = scenario.start()
    pid = proc.info["pid"]
    try:
        # Discovered, sampled (and probed) at least once, then a random moment within the
        # interval: the hang begins at any phase of the sampling and probing timers.
        time.sleep(args.interval / 1000 * (1.5 + random.random()) + 0.2)
        began = scenario.hang(proc)
        row, seen = service.wait_for(
            "SELECT id, opened_at_ns FROM incidents WHERE pid = ? AND kind = ?",
            (pid, scenario.kind), timeout=scenario.expected_ms() / 1000 * 3 + 10)
        if row is None:
            print(f"  {scenario.kind} run {run}: no incident (pid {pid})", flush=True)
            return None
        detected, by_opened_at = (seen - began) * 1000, (row[1] / 1e9 - began) * 1000
        # Released at a random moment of the timers too: right after the incident is seen, it
        # would always be at the same phase (half a period after a probe's 500 ms timeout, just
        # after a sample).
        time.sleep(random.random() * max(args.interval, args.probe_interval) / 1000)
        ended = scenario.release(proc)
        done, seen = service.wait_for(
            "SELECT resolved_at_ns FROM incidents WHERE id = ? AND state = 'resolved'",
            (row[0],), timeout=30)
        resolved = (seen - ended) * 1000 if done else None
        print(f"  {scenario.kind} run {run}/{args.runs}: detected in {detected:.0f} ms, "
              + (f"resolved in {resolved:.0f} ms" if done else "not resolved"), flush=True)
    finally:
        kill_group(proc)
    kinds = dict(service.query("SELECT kind, COUNT(*) FROM incidents WHERE pid = ? GROUP BY kind",
                               (pid,)))
    return detected, by_opened_at, resolved, kinds


def detection_runs(services, scenario, args):
    """`services.current()` is the running service, started anew when one was stopped from
    outside (a shared machine): the run it spoiled is done again, and the restart reported."""
    detect, detect_store, resolve, misses, others = [], [], [], 0, {}
    run = 1
    while run <= args.runs:
        try:
            r = one_run(services.current(), scenario, args, run)
        except ServiceGone as e:
            print(f"  {scenario.kind} run {run}: {e}\n  the run is done again under a new "
                  "service", flush=True)
            services.restart(str(e))
            continue
        run += 1
        if r is None:
            misses += 1
            continue
        detect.append(r[0])
        detect_store.append(r[1])
        if r[2] is not None:
            resolve.append(r[2])
        # Any other incident about this program: one incident per hang, nothing beside it.
        for kind, n in r[3].items():
            extra = n - 1 if kind == scenario.kind else n
            if extra:
                others[kind] = others.get(kind, 0) + extra
    return {"kind": scenario.kind, "compared_with": scenario.threshold_label,
            "expected_ms": scenario.expected_ms(), "runs": args.runs, "missed": misses,
            "detection": summary(detect), "detection_by_opened_at": summary(detect_store),
            "resolution": summary(resolve), "other_incidents_of_these_programs": others,
            "detection_samples_ms": [round(x) for x in detect],
            "resolution_samples_ms": [round(x) for x in resolve]}


class Services:
    """The detection runs' service, and the ones started after it when it was stopped from
    outside."""

    def __init__(self, start, keep):
        self.start = start
        self.keep = keep
        self.service = start()
        self.restarts = []
        self.totals = {}

    def current(self):
        return self.service

    def restart(self, why):
        self.restarts.append({"at": time.strftime("%H:%M:%S"), "why": why,
                              "state_kept": self.service.state})
        self.retire(keep=True)
        self.service = self.start()

    def retire(self, keep=None):
        for kind, n in self.service.counts_by_kind().items():
            self.totals[kind] = self.totals.get(kind, 0) + n
        self.service.close(keep=self.keep if keep is None else keep)


def detection(args):
    tag = f"--tag=outside-{os.getpid()}"
    scenarios = [SCENARIOS[k](args, f"{tag}-{k}") for k in args.kinds]

    def start():
        service = Service(args.wctmon, [s.target() for s in scenarios], args.interval,
                          log_level=args.log_level)
        time.sleep(1)
        return service

    services = Services(start, args.keep)
    results = []
    try:
        for s in scenarios:
            print(f"detection: {s.kind} x {args.runs}", flush=True)
            results.append(detection_runs(services, s, args))
    except BaseException:
        print(services.current().log_tail(), file=sys.stderr)
        raise
    finally:
        services.retire()
    return {"sampling_interval_ms": args.interval, "kinds": results,
            "incidents_in_store_by_kind": services.totals,
            "service_restarts": services.restarts}


# ---------------------------------------------------------------------------------------------
# 2. The cost of probes


def cost_round(args, targets, detection=None):
    service = Service(args.wctmon, targets, args.interval, metrics=True, detection=detection)
    try:
        time.sleep(args.warmup)
        service.check_alive()
        cpu0, t0 = service.cpu_seconds(), time.time()
        time.sleep(args.seconds)
        service.check_alive()
        cpu1, t1 = service.cpu_seconds(), time.time()
        rss, hwm = service.rss_mb(), service.hwm_mb()
        threads = proc_status(service.pid, "Threads")
        metrics = service.scrape()
        incidents = service.counts_by_kind()
    finally:
        service.close()

    def total(prefix):
        return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith(prefix))

    up = sum(1 for line in metrics.splitlines()
             if line.startswith("wctmon_probe_up{") and line.endswith(" 1"))
    return {"cpu_percent": (cpu1 - cpu0) / (t1 - t0) * 100, "rss_mb": rss, "hwm_mb": hwm,
            "threads": threads, "probes_up": up,
            "probe_passes": total("wctmon_probe_passes_total{"),
            "probe_failures": total("wctmon_probe_failures_total{"),
            "processes_watched": total("wctmon_watched_processes "),
            "threads_watched": total("wctmon_watched_threads "), "incidents": incidents}


def measure_variants(args, variants, measure=None):
    """Each (label, targets, detection) measured --rounds times by `measure` (cost_round unless
    given), interleaved so that a noisy minute weighs on all alike: the variants' medians, and
    the rounds measured again because the service was stopped from outside."""
    measure = measure or (lambda label, targets, detection: cost_round(args, targets, detection))
    rounds = {label: [] for label, _, _ in variants}
    restarts = []
    for r in range(args.rounds):
        for label, targets, detection in variants:
            for _ in range(3):
                try:
                    m = measure(label, targets, detection)
                    break
                except (ServiceGone, FileNotFoundError, ProcessLookupError) as e:
                    print(f"  round {r + 1}: {label}: {e}; measured again", flush=True)
                    restarts.append({"round": r + 1, "variant": label, "why": str(e)})
            else:
                sys.exit("the service was stopped from outside three times in a row")
            rounds[label].append(m)
            print(f"  round {r + 1}: {label}: CPU {m['cpu_percent']:.2f} %, RSS "
                  f"{m['rss_mb']:.1f} MB, probes up {m['probes_up']}, probe failures "
                  f"{m['probe_failures']:.0f}, processes watched {m['processes_watched']:.0f}, "
                  f"threads {m['threads_watched']:.0f}, incidents {m['incidents']}", flush=True)
    out = []
    for label, runs in rounds.items():
        out.append({"variant": label,
                    "cpu_percent_median": round(statistics.median(r["cpu_percent"] for r in runs), 2),
                    "rss_mb_median": round(statistics.median(r["rss_mb"] for r in runs), 1),
                    "hwm_mb_max": round(max(r["hwm_mb"] for r in runs), 1),
                    "rounds": runs})
    return out, restarts


def cost(args):
    tag = f"--cost-{os.getpid()}"
    ports = free_ports(args.targets)
    servers = []
    try:
        for i, port in enumerate(ports):
            servers.append(spawn(HTTP_SERVER, str(port), f"{tag}-{i:03d}-end"))
        print(f"cost: {len(servers)} HTTP servers (python3 http.server, one process each) up",
              flush=True)

        def targets(probes):
            out = []
            for i, port in enumerate(ports):
                t = {"name": f"web{i:03d}", "cmdline": f"{tag}-{i:03d}-end"}
                if probes:
                    t["probe"] = {"type": "http", "url": f"http://127.0.0.1:{port}/",
                                  "interval_ms": args.cost_probe_interval,
                                  "timeout_ms": args.probe_timeout, "failures": args.failures}
                out.append(t)
            return out

        # The floor: one target selecting the same servers (one expression over the command
        # lines instead of a hundred).
        one = [{"name": "web", "cmdline": f"{tag}-[0-9]+-end"}]
        variants, restarts = measure_variants(args, [
            ("baseline (no probes)", targets(False), None),
            ("one target for all (no probes)", one, None),
            (f"{args.targets} HTTP probes every {args.cost_probe_interval} ms", targets(True),
             None)])
    finally:
        for s in servers:
            kill_group(s)
    return {"targets": args.targets, "what": f"{args.targets} targets: one python3 "
            "ThreadingHTTPServer process per target, each on its own port, selected by its "
            "command line", "seconds": args.seconds, "warmup_seconds": args.warmup,
            "sampling_interval_ms": args.interval, "variants": variants,
            "rounds_measured_again": restarts}


def busy_cost(args):
    """The cost of looking for busy threads: --busy-processes idle spinner processes (two threads
    each) watched by one target, with busy detection off and on (its defaults), and on with
    --busy-spinning of them spinning (their threads profiled, their incidents opened)."""
    tag = f"--busy-cost-{os.getpid()}"
    procs = []
    try:
        for _ in range(args.busy_processes):
            procs.append(spawn_spinner(tag))
        print(f"busy cost: {len(procs)} processes up", flush=True)
        target = [{"name": "many", "cmdline": tag}]
        # Busy for the warm-up: the spinners are profiled and their incidents opened just after
        # the measured window begins.
        spinning_detection = {"busy": {"threshold_ms": max(1000, int(args.warmup * 1000)),
                                       "cpu_percent": args.busy_cpu_percent}}
        variants = [("busy detection off", target, {"busy": {"enabled": False}}),
                    ("busy detection on (defaults)", target, {"busy": {"enabled": True}})]
        if args.busy_spinning:
            variants.append((f"on, {args.busy_spinning} spinning", target, spinning_detection))

        def measure(label, targets, detection):
            spin = label.startswith("on, ")
            for p in procs[:args.busy_spinning if spin else 0]:
                tell(p, "spin")
            try:
                return cost_round(args, targets, detection)
            finally:
                for p in procs[:args.busy_spinning if spin else 0]:
                    tell(p, "stop")

        variants_out, restarts = measure_variants(args, variants, measure)
    finally:
        for p in procs:
            kill_group(p)
    return {"processes": args.busy_processes, "what": f"{args.busy_processes} C processes of "
            "two threads (one waits on a condition, one reads stdin), one target selecting them",
            "seconds": args.seconds, "warmup_seconds": args.warmup,
            "sampling_interval_ms": args.interval, "variants": variants_out,
            "rounds_measured_again": restarts}


# ---------------------------------------------------------------------------------------------


def print_tables(result):
    if "detection" in result:
        d = result["detection"]
        print(f"\nDetection and resolution (sampling interval {d['sampling_interval_ms']} ms, "
              f"{d['kinds'][0]['runs'] if d['kinds'] else 0} runs each)")
        print(f"{'kind':13} {'compared with':42} {'expected':>8} {'median':>7} {'p99':>7} "
              f"{'max':>7} {'missed':>6} | {'resolve med':>11} {'p99':>6}")
        for k in d["kinds"]:
            det, res = k["detection"], k["resolution"]
            print(f"{k['kind']:13} {k['compared_with']:42} {k['expected_ms']:>8} "
                  f"{det.get('median_ms', '-'):>7} {det.get('p99_ms', '-'):>7} "
                  f"{det.get('max_ms', '-'):>7} {k['missed']:>6} | "
                  f"{res.get('median_ms', '-'):>11} {res.get('p99_ms', '-'):>6}")
        print(f"incidents in the store by kind: {d['incidents_in_store_by_kind']}")
        for k in d["kinds"]:
            if k["other_incidents_of_these_programs"]:
                print(f"other incidents of the {k['kind']} programs: "
                      f"{k['other_incidents_of_these_programs']}")
        for r in d["service_restarts"]:
            print(f"service stopped from outside at {r['at']} and started again: {r['why']}")
    for key in ("cost", "busy_cost"):
        if key not in result:
            continue
        c = result[key]
        print(f"\nCost of {c['what']}: CPU over {c['seconds']} s after {c['warmup_seconds']} s, "
              f"median of {len(c['variants'][0]['rounds'])}")
        print(f"{'variant':36} {'CPU % of a core':>15} {'RSS MB':>7} {'peak MB':>8}  rounds")
        for v in c["variants"]:
            each = ", ".join(f"{r['cpu_percent']:.2f}" for r in v["rounds"])
            print(f"{v['variant']:36} {v['cpu_percent_median']:>15.2f} {v['rss_mb_median']:>7.1f} "
                  f"{v['hwm_mb_max']:>8.1f}  {each}")
        base = c["variants"][0]
        for v in c["variants"][1:]:
            print(f"{v['variant']}: {v['cpu_percent_median'] - base['cpu_percent_median']:+.2f} % "
                  f"of a core and {v['rss_mb_median'] - base['rss_mb_median']:+.1f} MB against "
                  f"{base['variant']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wctmon", default="build/default/service/wctmon",
                        help="wctmon (it runs the wctmond beside it)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--kinds", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--interval", type=int, default=1000, help="sampling interval, ms")
    parser.add_argument("--probe-interval", type=int, default=1000)
    parser.add_argument("--probe-timeout", type=int, default=500)
    parser.add_argument("--failures", type=int, default=3)
    parser.add_argument("--stall-threshold", type=int, default=5000)
    parser.add_argument("--busy-threshold", type=int, default=10000)
    parser.add_argument("--busy-cpu-percent", type=int, default=90,
                        help="below the default 95: the machine's other work takes its share")
    parser.add_argument("--busy-processes", type=int, default=500)
    parser.add_argument("--busy-spinning", type=int, default=1,
                        help="of --busy-processes, how many spin in the third variant")
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--cost-probe-interval", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--skip-detection", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--skip-busy-cost", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the detection service's state")
    parser.add_argument("--out", default="build/bench/outside_hangs.json")
    args = parser.parse_args()
    # A SIGTERM unwinds (the programs and services started are stopped, temp dirs removed).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.access(args.wctmon, os.X_OK):
        sys.exit(f"no wctmon at {args.wctmon} (--wctmon)")
    if not accepts(args.wctmon, {"targets": [{"name": "x", "exe": "x", "probe": {
            "type": "tcp", "address": "127.0.0.1:1"}}]}):
        sys.exit("this wctmon does not know targets[].probe")

    result = {"wctmon": os.path.abspath(args.wctmon), "host_cores": os.cpu_count(),
              "loadavg_at_start": os.getloadavg()}
    if not args.skip_detection:
        result["detection"] = detection(args)
    if not args.skip_cost:
        result["cost"] = cost(args)
    if not args.skip_busy_cost:
        result["busy_cost"] = busy_cost(args)
    result["loadavg_at_end"] = os.getloadavg()
    print_tables(result)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
