#!/usr/bin/env python3
"""Benchmarks the service's gRPC API (wctmond), with the in-tree load client wctmon-api-load:

1. status: GetStatus throughput and latency (p50/p99) with 16 and 64 concurrent callers,
   tokens on, over the Unix socket and loopback TCP; callers on gRPC's callback API sharing one
   channel or with one channel (connection) each, or blocking on a thread each; then an open
   loop at fixed rates (--rates), latency measured from each call's due time; client and
   service on the same cores. Medians of --rounds interleaved runs, against the goal of
   >= 20,000 req/s and p99 <= 2 ms, with the CPU the service spends per call and what the rest
   of the machine used meanwhile. With --baseline BUILD, an earlier service is measured the
   same way in the same run, rounds interleaved;
2. watch: --streams WatchIncidents streams that only read, while the service watches
   --processes x --threads idle threads (service.py's steady state): the per-process sample
   duration (the wctmon_sample_duration_seconds histogram over the window, and GetStatus's p99)
   and the service's CPU and RSS, with and without the watchers, in interleaved rounds, each on
   a fresh service; one deadlock forms and is killed in every window so that the streams carry
   events. Goal: sampling no more than 10 % slower with the watchers;
3. cli: `wctctl status` end to end (process start to answer, as a user runs it) next to
   `wctmon incidents` reading the store of the same state directory (and `wctctl incidents`,
   the same list through the API), --cli-runs interleaved runs each.

Run from the repository, with a build that has the service, wctctl, the fixture and the client:
    cmake --build build/default --target wctmond wctmon wctctl wctmon-fixture wctmon-api-load
    python3 scripts/bench/api.py --build build/default [--skip-status] [--skip-watch] [--skip-cli]
Takes about 20 minutes with the defaults. The machine's other load weighs on every figure: the
spread (min-max over rounds) is printed next to each median."""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service import proc_cpu_seconds, proc_status, stop  # noqa: E402


class ApiService:
    """A service with its API on a Unix socket and loopback TCP (port chosen by the system) and
    its metrics on loopback, in a state directory of its own."""

    def __init__(self, build, state, tag, interval_ms=1000, service_build=None, cpus=None,
                 target=None):
        """build: where wctctl is; service_build (default: build): where the service is; cpus:
        the CPUs it may run on (taskset's list), default any; target: more keys of the one
        target (selecting `tag` in command lines), {"out_of_proc": True} say."""
        self.build = build
        self.state = state
        self.socket = os.path.join(state, "api.sock")
        self.config = os.path.join(state, "wctmon.json")
        log = os.path.join(state, "wctmon.log")
        with open(self.config, "w") as f:
            json.dump({
                "state_dir": state,
                "sampling": {"interval_ms": interval_ms},
                "alerts": {"sink": "none"},
                "log": {"level": "info", "console": False, "file": os.path.basename(log)},
                "metrics": {"listen": "127.0.0.1:0"},
                "api": {"listen": ["unix:" + self.socket, "127.0.0.1:0"]},
                "targets": [dict({"name": "bench", "cmdline": tag}, **(target or {}))],
            }, f)
        pin = ["taskset", "-c", cpus] if cpus else []
        self.proc = subprocess.Popen(pin + [os.path.join(service_build or build, "service/wctmon"),
                                            "run", "--config", self.config],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        text = ""
        while "service started" not in text:
            if time.time() > deadline or self.proc.poll() is not None:
                stop(self.proc)
                sys.exit(f"the service did not start; its log:\n{text}")
            time.sleep(0.05)
            text = open(log).read() if os.path.exists(log) else ""
        self.tcp = "127.0.0.1:" + re.search(r"API listening on .*127\.0\.0\.1:(\d+)", text)[1]
        self.metrics = re.search(r"metrics served at (http://[0-9.:]+/metrics)", text)[1]
        self.admin_token = os.path.join(state, "api-admin.token")
        self.reader_token = os.path.join(state, "api-reader.token")
        self.unix = "unix:" + self.socket

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        stop(self.proc)

    def sample_histogram(self):
        """wctmon_sample_duration_seconds: {le: cumulative count}, sum, count."""
        with urllib.request.urlopen(self.metrics, timeout=10) as r:
            text = r.read().decode()
        buckets, total, count = {}, 0.0, 0
        for line in text.splitlines():
            if line.startswith("wctmon_sample_duration_seconds_bucket"):
                le = re.search(r'le="([^"]+)"', line)[1]
                buckets[float("inf") if le == "+Inf" else float(le)] = float(line.split()[-1])
            elif line.startswith("wctmon_sample_duration_seconds_sum"):
                total = float(line.split()[-1])
            elif line.startswith("wctmon_sample_duration_seconds_count"):
                count = int(float(line.split()[-1]))
        return buckets, total, count

    def status(self):
        """GetStatus through wctctl -o protojson (the proto3 JSON mapping)."""
        out = subprocess.run([os.path.join(self.build, "client/wctctl"), "status", "-o",
                              "protojson", "--server", self.unix, "--token-file",
                              self.reader_token],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)


def start_fixtures(fixture, scenario, count, threads, tag):
    """`count` fixture processes, each in its own session, once they have said they are ready."""
    fixtures = [subprocess.Popen([fixture, scenario, str(threads), tag], stdout=subprocess.PIPE,
                                 start_new_session=True) for _ in range(count)]
    for fx in fixtures:
        fx.stdout.readline()
    return fixtures


def kill_all(fixtures):
    for fx in fixtures:
        os.killpg(fx.pid, signal.SIGKILL)
    for fx in fixtures:
        fx.wait()


def spread(values, fmt="{:.0f}"):
    return (fmt + "–" + fmt).format(min(values), max(values))


def quantile_from_buckets(b0, b1, q):
    """The q-quantile of the observations between two scrapes of a cumulative histogram,
    interpolated linearly within its bucket (Prometheus' histogram_quantile)."""
    bounds = sorted(b1)
    counts = [b1[le] - b0.get(le, 0) for le in bounds]
    total = counts[-1]
    if total <= 0:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for le, c in zip(bounds, counts):
        if c >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(c - below, 1e-12)
        lower, below = le, c
    return bounds[-2]


def seconds_of(duration):
    """A proto3 JSON Duration ("0.001234s") in seconds."""
    return float(duration.rstrip("s")) if duration else 0.0


# ---- 1. GetStatus under load ------------------------------------------------------------------

def busy_cores():
    """CPU seconds the whole machine has spent busy (every process, every core), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_load(args, service, server, client, callers, channels, rate):
    cpu0, busy0, t0 = proc_cpu_seconds(service.pid), busy_cores(), time.time()
    pin = ["taskset", "-c", args.client_cpus] if args.client_cpus else []
    load = [os.path.join(args.build, "scripts/bench/wctmon-api-load"), "--server", server,
            "--token-file", service.reader_token, "status", "--client", client, "--callers",
            str(callers), "--channels", str(channels), "--rate", str(rate), "--seconds",
            str(args.load_seconds), "--warmup", str(args.load_warmup)]
    out = subprocess.run(pin + load, check=True, capture_output=True, text=True).stdout
    cpu1, busy1, t1 = proc_cpu_seconds(service.pid), busy_cores(), time.time()
    result = json.loads(out)
    server_cpu = cpu1 - cpu0
    result["server_cpu_percent"] = server_cpu / (t1 - t0) * 100
    result["server_cpu_us_per_call"] = server_cpu / max(result["all_calls"], 1) * 1e6
    result["client_cpu_percent"] = result["client_cpu_seconds"] / result["seconds"] * 100
    # What else ran meanwhile (other users of the machine, the fixtures, the service's sampling
    # included in its own figure): on a shared machine it explains a slow run.
    result["others_cpu_percent"] = max(
        0.0, ((busy1 - busy0) - server_cpu) / (t1 - t0) * 100 - result["client_cpu_percent"])
    return result


def status_bench(args, fixture):
    tag = f"--tag=api-status-{os.getpid()}"
    fixtures = start_fixtures(fixture, "idle", args.status_processes, args.threads, tag)
    configs = []
    for callers in (16, 64):
        for transport in ("unix", "tcp"):
            for client, channels in (("callback", 1), ("callback", callers), ("sync", 1)):
                configs.append((callers, transport, client, channels, 0))
    # The open loop: calls on a fixed schedule, at most 1,024 in flight, each measured from when
    # it was due (a closed loop at saturation measures its own queue, not the service's latency).
    for rate in args.rates:
        for transport in ("unix", "tcp"):
            configs.append((1024, transport, "callback", 1, rate))
    builds = [("", args.build)]
    if args.baseline:
        builds = [("this build", args.build), ("baseline", args.baseline)]
    results = {(label, c): [] for label, _ in builds for c in configs}
    threads = 0
    try:
        # Rounds interleave the builds and, within a round, the configurations: a noisy minute
        # weighs on each of them alike.
        for _ in range(args.rounds):
            for label, build in builds:
                with tempfile.TemporaryDirectory() as state:
                    service = ApiService(args.build, state, tag, service_build=build,
                                         cpus=args.service_cpus)
                    try:
                        time.sleep(3)  # the fixtures discovered and sampled
                        for c in configs:
                            callers, transport, client, channels, rate = c
                            server = service.unix if transport == "unix" else service.tcp
                            results[(label, c)].append(
                                run_load(args, service, server, client, callers, channels, rate))
                        threads = int(service.status()["watched_threads"])
                    finally:
                        service.stop()
    finally:
        kill_all(fixtures)
    print(f"GetStatus, reader token, {args.load_seconds:g} s per run after {args.load_warmup:g} s "
          f"warm-up, median of {args.rounds} interleaved runs (min–max); the service watches "
          f"{threads} threads; goal >= 20,000 req/s, p99 <= 2,000 µs. CPU in % of one core; "
          f"'others' is the rest of the machine meanwhile (2 cores = 200 %). 'callers' is the "
          f"closed loop's calls in flight, or 'R/s' an open loop's fixed rate (latency from each "
          f"call's due time; 'late': calls not made, 1,024 being unanswered)")
    for label, _ in builds:
        if label:
            print(f"-- {label}")
        print(f"{'callers':>7} {'transport':>9} {'client':>8} {'chan':>4} | {'req/s':>6} "
              f"{'(spread)':>13} | {'p50 µs':>6} {'p99 µs':>6} {'(spread)':>13} {'max µs':>7} | "
              f"{'err':>3} {'late':>6} | {'svc CPU':>7} {'µs/call':>7} {'client':>6} "
              f"{'others':>6}")
        for c in configs:
            runs = results[(label, c)]
            callers, transport, client, channels, rate = c
            rps = [r["rps"] for r in runs]
            p99 = [r["latency_us"]["p99"] for r in runs]
            errors = sum(sum(r["errors"].values()) for r in runs)
            late = sum(r.get("late", 0) for r in runs)
            med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
            load = f"{rate / 1000:g}k/s" if rate else str(callers)
            print(f"{load:>7} {transport:>9} {client:>8} {channels:>4} | "
                  f"{statistics.median(rps):>6.0f} {'(' + spread(rps) + ')':>13} | "
                  f"{statistics.median(r['latency_us']['p50'] for r in runs):>6.0f} "
                  f"{statistics.median(p99):>6.0f} {'(' + spread(p99) + ')':>13} "
                  f"{max(r['latency_us']['max'] for r in runs):>7} | {errors:>3} {late:>6} | "
                  f"{med('server_cpu_percent'):>7.0f} {med('server_cpu_us_per_call'):>7.1f} "
                  f"{med('client_cpu_percent'):>6.0f} {med('others_cpu_percent'):>6.0f}")
    if args.json_out:
        with open(args.json_out + ".status.json", "w") as f:
            json.dump([{"build": label, "callers": c[0], "transport": c[1], "client": c[2],
                        "channels": c[3], "rate": c[4], "runs": results[(label, c)]}
                       for label, _ in builds for c in configs], f, indent=1)


# ---- 2. WatchIncidents streams while the service samples --------------------------------------

def measure_watch(args, fixture, tag, with_watchers):
    with tempfile.TemporaryDirectory() as state:
        service = ApiService(args.build, state, tag)
        watch = None
        deadlock = None
        try:
            if with_watchers:
                watch = subprocess.Popen(
                    [os.path.join(args.build, "scripts/bench/wctmon-api-load"), "--server",
                     service.unix, "--token-file", service.reader_token, "watch", "--streams",
                     str(args.streams), "--seconds", str(args.warmup + args.seconds + 5)],
                    stdout=subprocess.PIPE, text=True)
                ready = json.loads(watch.stdout.readline())
                if not ready["ready"]:
                    sys.exit(f"the service counts {ready['watchers']} watchers, not "
                             f"{args.streams}")
            time.sleep(args.warmup)
            b0, s0, n0 = service.sample_histogram()
            cpu0, t0 = proc_cpu_seconds(service.pid), time.time()
            # One incident opens and resolves in every window, with or without watchers: the
            # streams carry events, and both sides pay for the same capture and store writes.
            deadlock = subprocess.Popen([fixture, "abba-on-demand", "", tag], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, start_new_session=True)
            deadlock.stdout.readline()
            time.sleep(min(5, args.seconds / 4))
            deadlock.stdin.write(b"go\n")
            deadlock.stdin.flush()
            time.sleep(args.seconds / 2)
            kill_all([deadlock])
            deadlock = None
            time.sleep(max(0.0, t0 + args.seconds - time.time()))
            cpu1, t1 = proc_cpu_seconds(service.pid), time.time()
            b1, s1, n1 = service.sample_histogram()
            rss = proc_status(service.pid, "VmRSS") / 1024
            hwm = proc_status(service.pid, "VmHWM") / 1024
            status = service.status()
        finally:
            if deadlock:
                kill_all([deadlock])
            service.stop()
        streams = None
        if watch:
            streams = json.loads(watch.stdout.readline() or "{}")
            watch.wait()
    samples = n1 - n0
    return {
        "cpu_percent": (cpu1 - cpu0) / (t1 - t0) * 100,
        "rss_mb": rss,
        "hwm_mb": hwm,
        "samples": samples,
        "mean_sample_ms": (s1 - s0) / samples * 1000 if samples else float("nan"),
        "p50_sample_ms": quantile_from_buckets(b0, b1, 0.50) * 1000,
        "p99_sample_ms": quantile_from_buckets(b0, b1, 0.99) * 1000,
        "status_p99_sample_ms": seconds_of(status.get("p99_sample_duration")) * 1000,
        "watchers": status.get("api_watchers", 0),
        "threads": int(status.get("watched_threads", 0)),
        "overdue": int(status.get("samples_overdue", 0)),
        "streams": streams,
    }


def watch_bench(args, fixture):
    tag = f"--tag=api-watch-{os.getpid()}"
    fixtures = start_fixtures(fixture, "idle", args.processes, args.threads, tag)
    results = {False: [], True: []}
    try:
        # ABBA order across rounds: a trend in the machine's load weighs on both sides alike.
        for r in range(args.watch_rounds):
            for with_watchers in ((False, True) if r % 2 == 0 else (True, False)):
                results[with_watchers].append(measure_watch(args, fixture, tag, with_watchers))
    finally:
        kill_all(fixtures)
    threads = results[False][-1]["threads"]
    print(f"\nWatchIncidents: {args.streams} streams reading while the service watches {threads} "
          f"threads ({args.processes} processes) at 1 s; {args.seconds:g} s windows after "
          f"{args.warmup:g} s, a fresh service each, median of {args.watch_rounds} interleaved "
          f"rounds (min–max)")
    print(f"{'':>16} | {'mean sample ms':>14} {'(spread)':>13} | {'p50 ms':>6} {'p99 ms':>6} "
          f"{'status p99':>10} | {'CPU % core':>10} {'(spread)':>11} | {'RSS MB':>6} "
          f"{'(spread)':>11} {'peak':>5}")
    for with_watchers, label in ((False, "without watchers"), (True, f"{args.streams} watchers")):
        runs = results[with_watchers]
        mean = [r["mean_sample_ms"] for r in runs]
        cpu = [r["cpu_percent"] for r in runs]
        rss = [r["rss_mb"] for r in runs]
        print(f"{label:>16} | {statistics.median(mean):>14.3f} "
              f"{'(' + spread(mean, '{:.3f}') + ')':>13} | "
              f"{statistics.median(r['p50_sample_ms'] for r in runs):>6.2f} "
              f"{statistics.median(r['p99_sample_ms'] for r in runs):>6.2f} "
              f"{statistics.median(r['status_p99_sample_ms'] for r in runs):>10.2f} | "
              f"{statistics.median(cpu):>10.1f} {'(' + spread(cpu, '{:.1f}') + ')':>11} | "
              f"{statistics.median(rss):>6.1f} {'(' + spread(rss, '{:.1f}') + ')':>11} "
              f"{max(r['hwm_mb'] for r in runs):>5.1f}")
    base = statistics.median(r["mean_sample_ms"] for r in results[False])
    loaded = statistics.median(r["mean_sample_ms"] for r in results[True])
    print(f"sample duration with watchers: {(loaded / base - 1) * 100:+.1f} % (goal <= +10 %); "
          f"samples per window {statistics.median(r['samples'] for r in results[True]):.0f} with, "
          f"{statistics.median(r['samples'] for r in results[False]):.0f} without; overdue "
          f"{max(r['overdue'] for r in results[True] + results[False])}")
    for r in results[True]:
        s = r["streams"] or {}
        print(f"  streams: {s.get('events')}, ended {s.get('ended')}, "
              f"watchers counted {r['watchers']}")
    if args.json_out:
        with open(args.json_out + ".watch.json", "w") as f:
            json.dump({"without": results[False], "with": results[True]}, f, indent=1)


# ---- 3. The command-line tools end to end -----------------------------------------------------

def cli_bench(args, fixture):
    tag = f"--tag=api-cli-{os.getpid()}"
    fixtures = start_fixtures(fixture, "idle", args.status_processes, args.threads, tag)
    deadlocked = []
    try:
        with tempfile.TemporaryDirectory() as state:
            service = ApiService(args.build, state, tag)
            try:
                # Something in the store to list: a few deadlocks, opened and recorded.
                for _ in range(3):
                    fx = subprocess.Popen([fixture, "mutex-abba", "", tag], stdout=subprocess.PIPE,
                                          start_new_session=True)
                    fx.stdout.readline()
                    deadlocked.append(fx)
                deadline = time.time() + 20
                while int(service.status().get("incidents_opened", 0)) < 3:
                    if time.time() > deadline:
                        sys.exit("the deadlocks were not recorded within 20 s")
                    time.sleep(0.2)
                wctctl = os.path.join(args.build, "client/wctctl")
                wctmon = os.path.join(args.build, "service/wctmon")
                commands = {
                    "wctctl status (unix socket)": [wctctl, "status", "--server", service.unix,
                                                    "--token-file", service.admin_token],
                    "wctctl status (loopback TCP)": [wctctl, "status", "--server", service.tcp,
                                                     "--token-file", service.admin_token],
                    "wctctl incidents (unix socket)": [wctctl, "incidents", "--server",
                                                       service.unix, "--token-file",
                                                       service.admin_token],
                    "wctmon incidents (the store)": [wctmon, "incidents", "--config",
                                                     service.config],
                }
                times = {name: [] for name in commands}
                for _ in range(args.cli_runs):
                    for name, command in commands.items():
                        t0 = time.perf_counter()
                        done = subprocess.run(command, capture_output=True)
                        times[name].append((time.perf_counter() - t0) * 1000)
                        if done.returncode != 0:
                            sys.exit(f"{' '.join(command)}: exit {done.returncode}: "
                                     f"{done.stderr.decode()}")
            finally:
                service.stop()
    finally:
        kill_all(deadlocked)
        kill_all(fixtures)
    print(f"\nCommand-line tools end to end (process start to answer, output to a pipe), "
          f"{args.cli_runs} interleaved runs each, 3 incidents in the store")
    print(f"{'':>31} | {'median ms':>9} {'min ms':>6} {'p90 ms':>6} {'max ms':>6}")
    for name, values in times.items():
        values.sort()
        p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
        print(f"{name:>31} | {statistics.median(values):>9.1f} {values[0]:>6.1f} {p90:>6.1f} "
              f"{values[-1]:>6.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--baseline", help="build directory of an earlier service, whose GetStatus "
                        "is measured the same way in the same run (the status benchmark only)")
    parser.add_argument("--rounds", type=int, default=5, help="GetStatus runs per configuration")
    parser.add_argument("--load-seconds", type=float, default=5)
    parser.add_argument("--load-warmup", type=float, default=1)
    parser.add_argument("--rates", type=lambda text: [int(x) for x in text.split(",") if x],
                        default=[5000, 10000, 20000],
                        help="open-loop GetStatus rates, calls a second, comma-separated")
    parser.add_argument("--service-cpus", help="taskset CPU list for the service in the status "
                        "benchmark (e.g. 1), to keep the load client off its cores")
    parser.add_argument("--client-cpus", help="taskset CPU list for the load client (e.g. 0)")
    parser.add_argument("--status-processes", type=int, default=20,
                        help="idle fixture processes watched while GetStatus is loaded")
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--processes", type=int, default=500)
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--watch-rounds", type=int, default=4,
                        help="rounds of the watch benchmark, each with and without watchers")
    parser.add_argument("--cli-runs", type=int, default=20)
    parser.add_argument("--json-out", help="also write every run to PREFIX.status.json/.watch.json")
    parser.add_argument("--skip-status", action="store_true")
    parser.add_argument("--skip-watch", action="store_true")
    parser.add_argument("--skip-cli", action="store_true")
    args = parser.parse_args()
    fixture = os.path.join(args.build, "tests/wctmon-fixture")
    if not args.skip_status:
        status_bench(args, fixture)
    if not args.skip_watch:
        watch_bench(args, fixture)
    if not args.skip_cli:
        cli_bench(args, fixture)


if __name__ == "__main__":
    main()
