#!/usr/bin/python3
"""A pid used again while the service watches, for real.

Usage: unshare --pid --fork --mount-proc pid_reuse.py WCTMON FIXTURE WORK_DIR

In a PID namespace of its own, pids are that namespace's and the next one can be chosen
(/proc/sys/kernel/ns_last_pid) without touching the machine's: what a pid_max wrap does on a busy
host. The service runs in the namespace. A process deadlocks and its incident opens; the process
is killed and at once another process is given the same pid and deadlocks too, before the service
has sampled again (interval 200 ms), so that it finds the pid alive and deadlocked the same way
(the same thread ids too). Prints one JSON object: both pids, whether each incident opened and
whether the first resolved, and the incidents of that pid as `wctmon incidents --json` lists
them."""
import json
import os
import subprocess
import sys
import time

wctmon, fixture, work = sys.argv[1:4]
tag = "--tag=pid-reuse"
os.makedirs(work, exist_ok=True)
config = os.path.join(work, "wctmon.json")
with open(config, "w") as f:
    json.dump({"state_dir": os.path.join(work, "state"), "sampling": {"interval_ms": 200},
               "alerts": {"sink": "none"}, "api": {"enabled": False},
               "metrics": {"enabled": False}, "targets": [{"name": "reuse", "cmdline": tag}]}, f)
log = open(os.path.join(work, "service.log"), "w")
service = subprocess.Popen([wctmon, "run", "--config", config], stdout=log, stderr=log)


def incidents():
    r = subprocess.run([wctmon, "incidents", "--config", config, "--json"], capture_output=True,
                       text=True)
    return json.loads(r.stdout).get("incidents", []) if r.returncode == 0 else []


def of(pid, state=None):
    return [i for i in incidents() if i.get("pid") == pid and (state is None or
                                                                i.get("state") == state)]


def wait_for(found, timeout=20):
    until = time.time() + timeout
    while time.time() < until:
        value = found()
        if value:
            return value
        time.sleep(0.1)
    return None


def deadlocked(kind):
    p = subprocess.Popen([fixture, "mutex-abba", kind, tag], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    p.stdout.readline()  # its report: the two threads are deadlocked
    return p


result = {}
try:
    first = deadlocked("normal")
    result["first_pid"] = first.pid
    opened = wait_for(lambda: of(first.pid, "INCIDENT_STATE_OPEN"))
    result["first_opened"] = bool(opened)
    first.kill()
    first.wait()
    # The next process gets the first one's pid: a thread or process made in between takes it,
    # so try again until none is.
    for _ in range(20):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(first.pid - 1))
        second = deadlocked("std")
        if second.pid == first.pid:
            break
        second.kill()
        second.wait()
    result["second_pid"] = second.pid
    result["first_resolved"] = bool(wait_for(lambda: of(first.pid, "INCIDENT_STATE_RESOLVED")))
    result["second_opened"] = bool(wait_for(lambda: of(second.pid, "INCIDENT_STATE_OPEN")))
    time.sleep(1)  # a few samples more: nothing else must change
    result["incidents"] = of(first.pid)
    second.kill()
    second.wait()
finally:
    service.terminate()
    service.wait()
print(json.dumps(result))
