#!/usr/bin/env python3
"""False alarms of the incidents of hangs that are not cycles (issue 25): for --minutes (10) the
service watches, with its default thresholds (30 s hang and stall threshold, 1 s sampling,
probes at their defaults: every 5 s, 2 s timeout, 3 failures):

- PostgreSQL 15 under `pgbench -c 4 -j 2 -T <minutes>` on a throwaway cluster (initdb in a
  temporary directory as the postgres user, on a free port): `exe: postgres`, a TCP probe of
  its port;
- `python3 -m http.server` under a `curl` loop (one curl of two requests every --curl-pause s):
  selected by its command line, an HTTP probe of its root;
- an idle JVM: a tiny Java program whose fixed pool of 8 threads waits for work that never
  comes while its main thread waits on a latch: `exe: java`, no probe (it listens nowhere).

At the end: the incidents of every kind in the store (each with its summary and every chain),
the probes' passes and failures, the service's CPU % of one core over the run and its RSS, the
work done (pgbench's tps, the curl requests answered). Prints a table and writes JSON to --out
(build/bench/false_alarms.json). Needs root (the cluster runs as postgres), PostgreSQL 15
(apt-get install postgresql), a JDK (javac) and curl."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from outside_hangs import Service, free_ports, kill_group  # noqa: E402

IDLE_JAVA = r"""
import java.util.concurrent.*;
public class Idle {
    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        for (int i = 0; i < 8; i++) pool.submit(() -> Thread.currentThread().getName());
        System.out.println("{\"pid\": " + ProcessHandle.current().pid() + "}");
        System.out.flush();
        new CountDownLatch(1).await();
    }
}
"""


def pg_bin(name):
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        sys.exit(f"no {name}: apt-get install postgresql")
    return candidates[-1]


def as_postgres(*command, **kw):
    return subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, **kw)


class Postgres:
    """A throwaway cluster under a temporary directory, on `port`, trust authentication."""

    def __init__(self, port, scale):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="wctmon-pg-")
        os.chmod(self.dir, 0o755)
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = os.path.join(self.dir, "data")
        as_postgres(pg_bin("initdb"), "-D", self.data, "-A", "trust", "-U", "postgres", "-N",
                    stdout=subprocess.DEVNULL)
        as_postgres(pg_bin("pg_ctl"), "-D", self.data, "-l", os.path.join(self.dir, "server.log"),
                    "-w", "-o", f"-p {port} -k {self.dir} -c listen_addresses=127.0.0.1", "start",
                    stdout=subprocess.DEVNULL)
        as_postgres(pg_bin("pgbench"), "-h", "127.0.0.1", "-p", str(port), "-i", "-q", "-s",
                    str(scale), "postgres", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def bench(self, clients, seconds):
        return subprocess.Popen(["runuser", "-u", "postgres", "--", pg_bin("pgbench"), "-h",
                                 "127.0.0.1", "-p", str(self.port), "-c", str(clients), "-j", "2",
                                 "-T", str(seconds), "postgres"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def close(self):
        subprocess.run(["runuser", "-u", "postgres", "--", pg_bin("pg_ctl"), "-D", self.data,
                        "-m", "fast", "-w", "stop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def chain_text(chain):
    """One chain on one line: thread -> object -> thread ..."""
    parts = []
    for n in chain.get("nodes", []):
        kind = n.get("object_type", "").replace("OBJECT_TYPE_", "").lower()
        status = n.get("status", "").replace("OBJECT_STATUS_", "").lower()
        if kind == "thread":
            wait = f" {n['wait_time_ms']} ms" if "wait_time_ms" in n else ""
            parts.append(f"{n.get('process_name', '')}/{n.get('tid')} "
                         f"{n.get('thread_name', '')!r} {status}{wait}")
        else:
            parts.append(f"{kind} {n.get('name', '')} {status} {n.get('detail', '')}".strip())
    return " -> ".join(parts)


def metric_by_target(text, name):
    out = {}
    for m in re.finditer(rf'^{name}\{{target="([^"]*)"\}} (\S+)$', text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def metric(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wctmon", default="build/default/service/wctmon")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=4, help="pgbench -c")
    parser.add_argument("--scale", type=int, default=10, help="pgbench -i -s")
    parser.add_argument("--curl-pause", type=float, default=0.05)
    parser.add_argument("--out", default="build/bench/false_alarms.json")
    parser.add_argument("--keep", action="store_true", help="keep the service's state_dir")
    args = parser.parse_args()
    # A SIGTERM unwinds: the service, the programs and the cluster are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if os.geteuid() != 0:
        sys.exit("run as root: the cluster runs as the postgres user")
    for tool in ("javac", "java", "curl"):
        if not shutil.which(tool):
            sys.exit(f"no {tool}")
    seconds = int(args.minutes * 60)
    pg_port, http_port = free_ports(2)
    work = tempfile.mkdtemp(prefix="wctmon-false-alarms-")
    children, pg, service, result = [], None, None, {}
    try:
        # The programs first: the service starts on programs that already answer.
        print("initdb, pgbench -i ...", flush=True)
        pg = Postgres(pg_port, args.scale)
        www = os.path.join(work, "www")
        os.makedirs(www)
        with open(os.path.join(www, "file.txt"), "w") as f:
            f.write("x" * 4096)
        http = subprocess.Popen([sys.executable, "-m", "http.server", str(http_port), "--bind",
                                 "127.0.0.1", "--directory", www], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        children.append(http)
        with open(os.path.join(work, "Idle.java"), "w") as f:
            f.write(IDLE_JAVA)
        subprocess.run(["javac", "-d", work, os.path.join(work, "Idle.java")], check=True)
        jvm = subprocess.Popen(["java", "-Xmx64m", "-cp", work, "Idle"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, start_new_session=True)
        children.append(jvm)
        jvm_pid = json.loads(jvm.stdout.readline())["pid"]
        for _ in range(100):
            if subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{http_port}/"]
                              ).returncode == 0:
                break
            time.sleep(0.1)

        targets = [
            {"name": "postgres", "exe": "postgres",
             "probe": {"type": "tcp", "address": f"127.0.0.1:{pg_port}"}},
            {"name": "http.server", "cmdline": rf"-m http\.server {http_port} ",
             "probe": {"type": "http", "url": f"http://127.0.0.1:{http_port}/"}},
            {"name": "jvm", "exe": "java"},
        ]
        # Default thresholds, default capture (dumps of deadlocks).
        service = Service(args.wctmon, targets, metrics=True, log_level="info", capture={})
        time.sleep(3)
        print(f"service pid {service.pid}, state {service.state}; {args.minutes:g} minutes of "
              f"pgbench -c {args.clients} and a curl loop", flush=True)

        bench = pg.bench(args.clients, seconds)
        curl_log = os.path.join(work, "curl.log")
        url = f"http://127.0.0.1:{http_port}"
        curl = subprocess.Popen(
            ["sh", "-c", f"while :; do curl -s -o /dev/null -o /dev/null -w '%{{http_code}}\\n' "
                         f"{url}/ {url}/file.txt >> {curl_log}; sleep {args.curl_pause}; done"],
            start_new_session=True)
        children.append(curl)

        cpu0, t0 = service.cpu_seconds(), time.time()
        series = []
        stopped_from_outside = None
        while time.time() - t0 < seconds:
            time.sleep(min(60, seconds - (time.time() - t0)))
            if service.proc.poll() is not None:
                # On a shared machine something else may stop it: the run is void, say so.
                stopped_from_outside = (f"the service exited with {service.proc.returncode} "
                                        f"after {time.time() - t0:.0f} s: "
                                        f"{service.log_tail(3)}")
                print(stopped_from_outside, flush=True)
                break
            cpu, now = service.cpu_seconds(), time.time()
            series.append({"t_s": round(now - t0), "cpu_percent": round((cpu - cpu0) / (now - t0)
                                                                         * 100, 2),
                           "rss_mb": round(service.rss_mb(), 1), "load1": os.getloadavg()[0],
                           "incidents": service.counts_by_kind()})
            print(f"  {series[-1]['t_s']:4d} s: service CPU {series[-1]['cpu_percent']:.2f} % "
                  f"(so far), RSS {series[-1]['rss_mb']} MB, load {os.getloadavg()[0]:.2f}, "
                  f"incidents {series[-1]['incidents']}", flush=True)
        if stopped_from_outside:
            sys.exit("run void: " + stopped_from_outside)
        cpu1, t1 = service.cpu_seconds(), time.time()
        rss, hwm = service.rss_mb(), service.hwm_mb()
        metrics = service.scrape()
        kill_group(curl)
        children.remove(curl)
        try:
            out, _ = bench.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            bench.kill()
            out, _ = bench.communicate()
        tps = re.search(r"tps = ([0-9.]+)", out or "")
        with open(curl_log) as f:
            codes = f.read().split()

        # Every incident of the run, whole.
        listed = service.incidents_json()
        incidents = []
        for i in listed:
            whole = service.incident_json(i["id"])
            incidents.append({
                "id": i["id"], "kind": i.get("kind"), "state": i.get("state"),
                "target": i.get("target"), "pid": i.get("pid"),
                "process": i.get("process_name"), "summary": i.get("summary"),
                "opened_at": i.get("opened_at"), "resolved_at": i.get("resolved_at"),
                "resolution": i.get("resolution"),
                "chains": [chain_text(c) for c in whole.get("chains", [])]})
        kinds = ["deadlock", "hang", "unresponsive", "busy", "stall", "service-hung", "window-hung"]
        by_kind = {k: 0 for k in kinds}
        by_kind.update(service.counts_by_kind())
        result = {
            "minutes": args.minutes, "host_cores": os.cpu_count(),
            "thresholds": "defaults: sampling 1000 ms, hang/stall 30000 ms, probes every 5000 ms,"
                          " timeout 2000 ms, 3 failures",
            "service": {"cpu_percent": round((cpu1 - cpu0) / (t1 - t0) * 100, 2),
                        "rss_mb": round(rss, 1), "hwm_mb": round(hwm, 1),
                        "watched_processes": metric(metrics, "wctmon_watched_processes"),
                        "watched_threads": metric(metrics, "wctmon_watched_threads"),
                        "samples": metric(metrics, "wctmon_samples_total"),
                        "sample_errors": metric(metrics, "wctmon_sample_errors_total"),
                        "samples_overdue": metric(metrics, "wctmon_samples_overdue_total")},
            "probes": {"passes": metric_by_target(metrics, "wctmon_probe_passes_total"),
                       "failures": metric_by_target(metrics, "wctmon_probe_failures_total")},
            "workload": {"pgbench_tps": float(tps.group(1)) if tps else None,
                         "pgbench_clients": args.clients, "pgbench_scale": args.scale,
                         "curl_requests": len(codes),
                         "curl_not_200": sum(1 for c in codes if c != "200"),
                         "jvm_pid": jvm_pid},
            "incidents_by_kind": by_kind,
            "incidents": incidents,
            "series": series,
            "loadavg_at_end": os.getloadavg(),
        }
    except BaseException:
        if service:
            print(service.log_tail(), file=sys.stderr)
        raise
    finally:
        # The service first: stopping the programs under it would be true alarms.
        if service:
            service.close(keep=args.keep)
        for c in children:
            kill_group(c)
        if pg:
            pg.close()
        shutil.rmtree(work, ignore_errors=True)

    s, w = result["service"], result["workload"]
    print(f"\nFalse alarms over {args.minutes:g} min ({result['thresholds']})")
    print("incidents: " + ", ".join(f"{k} {n}" for k, n in result["incidents_by_kind"].items()))
    print(f"service: CPU {s['cpu_percent']:.2f} % of one core, RSS {s['rss_mb']} MB (peak "
          f"{s['hwm_mb']} MB), {s['watched_processes']:.0f} processes / "
          f"{s['watched_threads']:.0f} threads watched at the end, {s['samples']:.0f} samples "
          f"({s['sample_errors']:.0f} errors, {s['samples_overdue']:.0f} overdue)")
    for t in result["probes"]["passes"]:
        print(f"probe {t}: {result['probes']['passes'][t]:.0f} passed, "
              f"{result['probes']['failures'].get(t, 0):.0f} failed")
    print(f"work: pgbench {w['pgbench_tps']} tps, curl {w['curl_requests']} requests "
          f"({w['curl_not_200']} not 200), JVM pid {w['jvm_pid']}")
    for i in result["incidents"]:
        print(f"\n#{i['id']} {i['kind']} {i['state']} target {i['target']} pid {i['pid']}: "
              f"{i['summary']}")
        for c in i["chains"]:
            print(f"    {c}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
