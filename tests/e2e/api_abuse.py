#!/usr/bin/python3
"""Abuses wctmon's API while a well-behaved client calls it, and says what each side saw.

Usage: api_abuse.py PROTO_DIR WORK_DIR TCP_TARGET UNIX_SOCKET READER_TOKEN [SECONDS]

First the well-behaved client alone: GetStatus over TCP, one call after the other, for SECONDS
(default 3). Then the same while, at once:
  - 1,000 connections are opened to the TCP port and the Unix socket and left idle;
  - 50 more send bytes that are no HTTP/2 (random, then an HTTP/1.1 request) and stay open;
  - 200 WatchIncidents streams subscribe and never read (their HTTP/2 window held small);
  - a client opens a WatchIncidents stream and cancels it at once, over and over;
  - calls with no token and with a token that is not one.
Prints one JSON object: the well-behaved client's calls, failures and latency p50/p99/max (ms)
alone and under abuse, the abusers' counts and the status codes they got."""
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_client import stubs  # noqa: E402


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))] if values else None


def well_behaved(stub, metadata, messages, seconds):
    latencies, failures = [], []
    until = time.time() + seconds
    while time.time() < until:
        start = time.perf_counter()
        try:
            stub.GetStatus(messages.GetStatusRequest(), metadata=metadata, timeout=5)
            latencies.append((time.perf_counter() - start) * 1000)
        except grpc.RpcError as e:
            failures.append(e.code().name)
    return {"calls": len(latencies) + len(failures), "failures": failures,
            "p50_ms": statistics.median(latencies) if latencies else None,
            "p99_ms": percentile(latencies, 0.99), "max_ms": max(latencies, default=None)}


def main():
    proto_dir, work_dir, tcp, unix_path, token_file = sys.argv[1:6]
    seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 3.0
    messages, services = stubs(proto_dir, work_dir)
    with open(token_file) as f:
        token = f.read().strip()
    metadata = [("authorization", "Bearer " + token)]
    channel = grpc.insecure_channel(tcp)
    stub = services.MonitorStub(channel)
    result = {"alone": well_behaved(stub, metadata, messages, seconds)}

    host, port = tcp.rsplit(":", 1)
    idle = []
    for i in range(1000):
        s = socket.socket(socket.AF_UNIX if i % 2 else socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.connect(unix_path if i % 2 else (host, int(port)))
            idle.append(s)
        except OSError:
            s.close()
    garbage = []
    rnd = random.Random(7)
    for i in range(50):
        s = socket.create_connection((host, int(port)))
        try:
            s.sendall(bytes(rnd.randrange(256) for _ in range(4096)) if i % 2 else
                      b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            pass
        garbage.append(s)

    watch_codes = {}
    watchers = []
    for _ in range(200):
        c = grpc.insecure_channel(tcp, options=[("grpc.http2.lookahead_bytes", 1024),
                                                ("grpc.http2.bdp_probe", 0)])
        call = services.MonitorStub(c).WatchIncidents(messages.WatchIncidentsRequest(),
                                                      metadata=metadata)
        watchers.append((c, call))

    stop = threading.Event()
    churn = {"streams": 0}

    def open_and_cancel():
        c = grpc.insecure_channel(tcp)
        s = services.MonitorStub(c)
        while not stop.is_set():
            call = s.WatchIncidents(messages.WatchIncidentsRequest(), metadata=metadata)
            call.cancel()
            churn["streams"] += 1
        c.close()

    refused = {}

    def strangers():
        while not stop.is_set():
            for md in ([], [("authorization", "Bearer not-a-token")]):
                try:
                    stub.ListIncidents(messages.ListIncidentsRequest(), metadata=md, timeout=5)
                    code = "OK"
                except grpc.RpcError as e:
                    code = e.code().name
                refused[code] = refused.get(code, 0) + 1
            time.sleep(0.01)

    threads = [threading.Thread(target=open_and_cancel), threading.Thread(target=strangers)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    result["abused"] = well_behaved(stub, metadata, messages, seconds)
    stop.set()
    for t in threads:
        t.join()
    for c, call in watchers:
        code = call.code().name if call.done() else "OPEN"
        watch_codes[code] = watch_codes.get(code, 0) + 1
        call.cancel()
        c.close()
    for s in idle + garbage:
        s.close()
    result["idle_connections"] = len(idle)
    result["garbage_connections"] = len(garbage)
    result["watchers"] = watch_codes
    result["opened_and_cancelled"] = churn["streams"]
    result["strangers"] = refused
    print(json.dumps(result))


if __name__ == "__main__":
    main()
