#!/usr/bin/python3
"""A churn soak of the service (scripts/bench/soak.sh; not part of the test command).

For --minutes (60 by default) the service watches, all at once: --rate short-lived processes a
minute (2,000), a process whose threads are created and joined without pause, a stopped process
and one held by gdb, a process of 5,000 threads, a real deadlock planted every --deadlock-every
seconds (180) and killed a minute later, 20 `wctctl watch` streams and a reader that calls
ListIncidents without pause. Every 10 s it writes a row of OUT/soak.csv: the service's CPU % of
one core, RSS, descriptors, threads, store size, the p99 of its sample duration (from its
metrics) and the detection latency of the deadlocks planted so far; at the end OUT/soak.png (the
same over time) and a summary: RSS and descriptors after warm-up, every deadlock caught within
one interval + 100 ms, each stored once, none lost."""
import argparse
import csv
import datetime
import json
import os
import random
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from service import proc_cpu_seconds, proc_status, stop  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sample_p99(text, previous):
    """The p99 of the sample durations observed since `previous` (bucket counts), in ms."""
    buckets = {}
    for m in re.finditer(r'^wctmon_sample_duration_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)',
                         text, re.M):
        le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
        buckets[le] = buckets.get(le, 0) + float(m.group(2))
    delta = sorted((le, n - previous.get(le, 0)) for le, n in buckets.items())
    total = delta[-1][1] if delta else 0
    p99 = None
    for le, n in delta:
        if total > 0 and n >= 0.99 * total:
            p99 = le * 1000
            break
    return p99, buckets


class Soak:
    def __init__(self, args):
        self.args = args
        self.build = args.build
        self.fixture = os.path.join(self.build, "tests", "wctmon-fixture")
        self.state = tempfile.mkdtemp(prefix="wctmon-soak-")
        self.tag = "--soak=" + os.path.basename(self.state)
        self.stop = threading.Event()
        self.children = []
        self.latencies = []  # (pid, ms)
        self.planted = []
        self.formed = {}
        self.lock = threading.Lock()

    def start_service(self):
        self.metrics = f"127.0.0.1:{free_port()}"
        self.socket = os.path.join(self.state, "api.sock")
        config = os.path.join(self.state, "wctmon.json")
        with open(config, "w") as f:
            json.dump({"state_dir": self.state,
                       "sampling": {"interval_ms": self.args.interval},
                       "alerts": {"sink": "none"},
                       "log": {"level": "info", "console": False},
                       "api": {"listen": ["unix:" + self.socket]},
                       "metrics": {"listen": self.metrics},
                       "targets": [{"name": "soak", "cmdline": re.escape(self.tag)}]}, f)
        self.service = subprocess.Popen([os.path.join(self.build, "service", "wctmon"), "run",
                                         "--config", config], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while not os.path.exists(os.path.join(self.state, "api-reader.token")):
            if time.time() > deadline:
                sys.exit("the service did not start")
            time.sleep(0.1)

    def fixture_process(self, *args, stdin=None):
        p = subprocess.Popen([self.fixture, *args, self.tag], stdin=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        self.children.append(p)
        return p

    @staticmethod
    def kill(process):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def short_lived(self):
        # Each a `sleep` whose argv[0] carries the tag: a real exec, cheap, watched by the target.
        gap = 60.0 / max(self.args.rate, 1)
        running = []
        next_at = time.time()
        while not self.stop.is_set() and self.args.rate > 0:
            running.append(subprocess.Popen([f"soak-short {self.tag}",
                                             f"{random.uniform(0.2, 3):.2f}"],
                                            executable="/bin/sleep"))
            running = [p for p in running if p.poll() is None]
            next_at += gap
            time.sleep(max(0, next_at - time.time()))
        for p in running:
            p.kill()
            p.wait()

    def deadlocks(self):
        db = None
        while not self.stop.wait(self.args.deadlock_every if self.planted else 30):
            fx = self.fixture_process("abba-on-demand", "", stdin=subprocess.PIPE)
            pid = json.loads(fx.stdout.readline())["pid"]
            time.sleep(self.args.interval / 1000 * random.uniform(1.5, 2.5))
            fx.stdin.write(b"go\n")
            fx.stdin.flush()
            formed = int(fx.stdout.readline()) / 1e9
            self.planted.append(pid)
            self.formed[pid] = formed
            if db is None:
                db = sqlite3.connect(f"file:{os.path.join(self.state, 'incidents.db')}?mode=ro",
                                     uri=True)
            while not self.stop.is_set():
                if db.execute("SELECT 1 FROM incidents WHERE pid = ? AND kind = 'deadlock'",
                              (pid,)).fetchone():
                    with self.lock:
                        self.latencies.append((pid, (time.time() - formed) * 1000))
                    break
                if time.time() - formed > 30:
                    with self.lock:
                        self.latencies.append((pid, None))
                    break
                time.sleep(0.002)
            threading.Timer(60, self.kill, (fx,)).start()

    def reader(self):
        from api_client import stubs
        import grpc
        messages, services = stubs(os.path.join(ROOT, "proto"), self.state)
        with open(os.path.join(self.state, "api-reader.token")) as f:
            metadata = [("authorization", "Bearer " + f.read().strip())]
        stub = services.MonitorStub(grpc.insecure_channel("unix:" + self.socket))
        self.reads = 0
        while not self.stop.is_set():
            try:
                stub.ListIncidents(messages.ListIncidentsRequest(page_size=100),
                                   metadata=metadata, timeout=10)
                self.reads += 1
            except grpc.RpcError:
                time.sleep(0.1)

    def run(self):
        self.start_service()
        load = [threading.Thread(target=f) for f in (self.short_lived, self.deadlocks, self.reader)
                if f != self.reader or not self.args.without_reader]
        if not self.args.without_churn:
            self.fixture_process("churn", str(int(self.args.minutes * 60 * 1000 + 60000)))
        if not self.args.without_big:
            self.fixture_process("idle", "5000")
        stopped = self.fixture_process("idle", "10")
        traced = self.fixture_process("idle", "10")
        for p in (stopped, traced):
            p.stdout.readline()
        os.kill(stopped.pid, signal.SIGSTOP)
        gdb = subprocess.Popen(["gdb", "-nx", "-batch", "-p", str(traced.pid), "-ex",
                                f"shell sleep {self.args.minutes * 60 + 60}"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
        watchers = [subprocess.Popen([os.path.join(self.build, "client", "wctctl"), "-s",
                                      "unix:" + self.socket, "--token-file",
                                      os.path.join(self.state, "api-reader.token"), "watch"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for _ in range(20)]
        for t in load:
            t.start()
        os.makedirs(self.args.out, exist_ok=True)
        rows = []
        start = time.time()
        cpu0, t0 = proc_cpu_seconds(self.service.pid), time.time()
        buckets = {}
        with open(os.path.join(self.args.out, "soak.csv"), "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["seconds", "cpu_percent", "rss_mb", "descriptors", "threads",
                          "store_kb", "sample_p99_ms", "deadlocks_planted", "latency_max_ms"])
            while time.time() - start < self.args.minutes * 60:
                time.sleep(10)
                cpu1, t1 = proc_cpu_seconds(self.service.pid), time.time()
                metrics = urllib.request.urlopen(f"http://{self.metrics}/metrics").read().decode()
                p99, buckets = sample_p99(metrics, buckets)
                store = sum(os.path.getsize(os.path.join(self.state, n))
                            for n in ("incidents.db", "incidents.db-wal")
                            if os.path.exists(os.path.join(self.state, n)))
                with self.lock:
                    caught = [ms for _, ms in self.latencies if ms is not None]
                row = [round(t1 - start), round((cpu1 - cpu0) / (t1 - t0) * 100, 1),
                       round(proc_status(self.service.pid, "VmRSS") / 1024, 1),
                       len(os.listdir(f"/proc/{self.service.pid}/fd")),
                       proc_status(self.service.pid, "Threads"), store // 1024,
                       p99, len(self.planted), round(max(caught), 1) if caught else ""]
                cpu0, t0 = cpu1, t1
                out.writerow(row)
                f.flush()
                rows.append(row)
                print(*row, sep="\t", flush=True)
        self.stop.set()
        for t in load:
            t.join()
        peak_tasks = proc_status(self.service.pid, "Threads")
        hwm = proc_status(self.service.pid, "VmHWM") / 1024
        for p in watchers + [gdb]:
            p.kill()
            p.wait()
        os.kill(stopped.pid, signal.SIGCONT)
        for p in self.children:
            self.kill(p)
            p.wait()
        time.sleep(2 * self.args.interval / 1000)
        stop(self.service)
        self.summary(rows, hwm, peak_tasks)

    def summary(self, rows, hwm, tasks):
        db = sqlite3.connect(os.path.join(self.state, "incidents.db"))
        stored = {pid: n for pid, n in db.execute(
            "SELECT pid, COUNT(*) FROM incidents WHERE kind = 'deadlock' GROUP BY pid")}
        warm = [r for r in rows if r[0] >= min(600, self.args.minutes * 60 * 0.2)] or rows
        caught = [ms for _, ms in self.latencies if ms is not None]
        goal = self.args.interval + 100
        result = {
            "minutes": self.args.minutes,
            "cpu_percent_median": statistics.median(r[1] for r in rows),
            "rss_mb_after_warmup": [min(r[2] for r in warm), max(r[2] for r in warm)],
            "rss_mb_peak": round(hwm, 1),
            "descriptors_after_warmup": [min(r[3] for r in warm), max(r[3] for r in warm)],
            "threads_at_end": tasks,
            "store_kb_at_end": rows[-1][5] if rows else None,
            "sample_p99_ms_max": max((r[6] for r in rows if r[6] is not None), default=None),
            "deadlocks_planted": len(self.planted),
            "caught_within_goal": sum(1 for ms in caught if ms <= goal),
            "detection_ms_p50_max": [statistics.median(caught), max(caught)] if caught else None,
            # Of which: from the deadlock to the service's decision (its log line), the rest
            # being the capture of evidence and the store write.
            "decision_ms_p50_max": self.decisions(),
            "not_caught": [pid for pid, ms in self.latencies if ms is None],
            "stored_other_than_once": {p: stored.get(p, 0) for p in self.planted
                                       if stored.get(p, 0) != 1},
            "list_incidents_calls": getattr(self, "reads", 0),
        }
        print(json.dumps(result, indent=1))
        with open(os.path.join(self.args.out, "summary.json"), "w") as f:
            json.dump(result, f, indent=1)
        self.plot(rows)

    def decisions(self):
        """From each planted deadlock's forming to the log line of its incident's opening."""
        opened = {}
        try:
            with open(os.path.join(self.state, "wctmon.log"), errors="replace") as f:
                for line in f:
                    m = re.match(r"(\S+) warning deadlock incident opened: .*\(pid (\d+)\)", line)
                    if m:
                        opened.setdefault(int(m.group(2)),
                                          datetime.datetime.fromisoformat(m.group(1)).timestamp())
        except OSError:
            return None
        ms = [(opened[pid] - formed) * 1000 for pid, formed in self.formed.items() if pid in opened]
        return [round(statistics.median(ms), 1), round(max(ms), 1)] if ms else None

    def plot(self, rows):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        t = [r[0] / 60 for r in rows]
        fig, axes = plt.subplots(5, 1, figsize=(10, 13), sharex=True)
        for ax, column, label in zip(axes, (1, 2, 3, 5, 6),
                                     ("CPU % of one core", "RSS (MB)", "descriptors",
                                      "store (KiB)", "sample p99 (ms)")):
            ax.plot(t, [r[column] if r[column] is not None else float("nan") for r in rows])
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
        axes[-1].set_xlabel("minutes")
        fig.suptitle(f"wctmon soak: {self.args.rate} processes/min, 5,000-thread process, "
                     f"deadlock every {self.args.deadlock_every} s, 20 watchers, a reader")
        fig.tight_layout()
        fig.savefig(os.path.join(self.args.out, "soak.png"), dpi=90)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--rate", type=int, default=2000, help="short-lived processes a minute")
    parser.add_argument("--deadlock-every", type=int, default=180)
    parser.add_argument("--interval", type=int, default=1000)
    parser.add_argument("--out", default="build/soak")
    # To find what a figure owes to which part of the load.
    parser.add_argument("--without-reader", action="store_true")
    parser.add_argument("--without-churn", action="store_true")
    parser.add_argument("--without-big", action="store_true")
    Soak(parser.parse_args()).run()


if __name__ == "__main__":
    main()
