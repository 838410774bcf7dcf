#!/usr/bin/env python3
"""What asking a JVM for its thread dump costs it: a HotSpot JVM with N threads (a fixed pool
idle after a burst, threads in Thread.sleep, threads spinning, and one synchronized ABBA) runs
with its safepoints logged; `wctmon analyze --pid` (which asks the JVM for its thread dump, as a
person's analysis does) and, as the reference, `jstack -l` are run in turn. The pause is what
HotSpot's own safepoint log says each dump cost (PrintThreads + PrintJNI + FindDeadlocks, from
the request to the threads' release). Also reports wctmon's wall time per analysis. Medians."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = r"""
import java.util.concurrent.*;
public class DumpBench {
    static final Object A = new Object(), B = new Object();
    static volatile long sink;
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        int pool = n / 2, sleepers = n / 4, spinners = 2;
        ExecutorService ex = Executors.newFixedThreadPool(pool);
        for (int i = 0; i < pool * 20; i++) { final int k = i; ex.submit(() -> { sink += k; }); }
        for (int i = 0; i < sleepers; i++) {
            new Thread(() -> { try { Thread.sleep(3600_000); } catch (InterruptedException e) {} }).start();
        }
        for (int i = 0; i < spinners; i++) {
            new Thread(() -> { long x = 0; while (true) { x++; if ((x & 0xffffff) == 0) sink = x; } }).start();
        }
        new Thread(() -> { synchronized (A) { nap(); synchronized (B) {} } }).start();
        new Thread(() -> { synchronized (B) { nap(); synchronized (A) {} } }).start();
        int rest = n - pool - sleepers - spinners - 2;
        for (int i = 0; i < rest; i++) {
            new Thread(() -> { try { new CountDownLatch(1).await(); } catch (InterruptedException e) {} }).start();
        }
        Thread.sleep(2000);
        System.out.println(ProcessHandle.current().pid());
        Thread.sleep(3600_000);
    }
    static void nap() { try { Thread.sleep(300); } catch (InterruptedException e) {} }
}
"""

OPERATIONS = ("PrintThreads", "PrintJNI", "FindDeadlocks")
LINE = re.compile(r'Safepoint "(\w+)".*Total: (\d+) ns')


def dump_pauses(log, start):
    """The pause of each thread dump logged after byte `start`: the sum of its safepoints."""
    with open(log) as f:
        f.seek(start)
        text = f.read()
    pauses, current = [], 0
    for m in LINE.finditer(text):
        if m.group(1) not in OPERATIONS:
            continue
        current += int(m.group(2))
        if m.group(1) == "FindDeadlocks":
            pauses.append(current / 1e6)
            current = 0
    return pauses


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default="build/default")
    parser.add_argument("--threads", type=int, default=200)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    wctmon = os.path.join(args.build, "service", "wctmon")
    if not os.access(wctmon, os.X_OK):
        sys.exit(f"no {wctmon}: build first")
    work = tempfile.mkdtemp(prefix="wctmon-jvm-bench-")
    try:
        with open(os.path.join(work, "DumpBench.java"), "w") as f:
            f.write(SOURCE)
        subprocess.run(["javac", "DumpBench.java"], cwd=work, check=True)
        log = os.path.join(work, "safepoints.log")
        jvm = subprocess.Popen(["java", f"-Xlog:safepoint=info:file={log}", "-cp", work,
                                "DumpBench", str(args.threads)], stdout=subprocess.PIPE, text=True)
        try:
            pid = jvm.stdout.readline().strip()
            if not pid:
                sys.exit("the JVM did not start")
            tasks = len(os.listdir(f"/proc/{pid}/task"))
            results = {"wctmon analyze": ([], []), "jstack -l": ([], [])}
            commands = {"wctmon analyze": [wctmon, "analyze", "--pid", pid],
                        "jstack -l": ["jstack", "-l", pid]}
            for _ in range(args.runs):
                for name, argv in commands.items():
                    start = os.path.getsize(log)
                    began = time.perf_counter()
                    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True, check=False)
                    wall = (time.perf_counter() - began) * 1000
                    if name == "wctmon analyze" and "DEADLOCK" not in r.stdout:
                        sys.exit("wctmon did not find the Java deadlock:\n" + r.stdout[:2000])
                    time.sleep(0.3)  # the log is written by the JVM's own thread
                    pauses = dump_pauses(log, start)
                    if len(pauses) != 1:
                        sys.exit(f"{name}: {len(pauses)} thread dumps logged, expected 1")
                    results[name][0].append(pauses[0])
                    results[name][1].append(wall)
            print(f"JVM with {args.threads} Java threads ({tasks} OS threads), {args.runs} runs, medians")
            for name, (pauses, walls) in results.items():
                print(f"  {name:16s} pause {statistics.median(pauses):7.2f} ms "
                      f"(max {max(pauses):6.2f})   wall {statistics.median(walls):7.1f} ms")
        finally:
            jvm.kill()
            jvm.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
