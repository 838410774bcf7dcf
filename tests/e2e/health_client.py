#!/usr/bin/python3
"""A client of the standard health service (grpc.health.v1.Health), as a load balancer or
Kubernetes' gRPC probe uses it: Python's grpcio, the two messages encoded by hand.

Usage: health_client.py TARGET SERVICE SECONDS [WATCHES]
  Watches SERVICE for SECONDS (WATCHES calls at once, default 1) and then checks it. Prints one
  JSON object: {"watches": [{"statuses": [...], "code": "OK" | status name}, ...],
  "check": {"code": ..., "status": ...}}: the statuses each Watch call received, in order, and
  how it ended (DEADLINE_EXCEEDED: it was still open after SECONDS, as a watch should be).
"""
import json
import sys
import threading

import grpc

STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def request(service):
    """HealthCheckRequest { service = 1 }."""
    name = service.encode()
    return (b"\x0a" + bytes([len(name)]) + name) if name else b""


def status_of(raw):
    """HealthCheckResponse { status = 1 } (absent: UNKNOWN)."""
    return STATUS.get(raw[1] if len(raw) >= 2 and raw[0] == 0x08 else 0, raw.hex())


def identity(x):
    return x


def main():
    target, service, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    channel = grpc.insecure_channel(target)
    watch = channel.unary_stream("/grpc.health.v1.Health/Watch", request_serializer=identity,
                                 response_deserializer=identity)
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=identity,
                                response_deserializer=identity)
    results = [{"statuses": []} for _ in range(count)]

    def run(result):
        try:
            for raw in watch(request(service), timeout=seconds):
                result["statuses"].append(status_of(raw))
            result["code"] = "OK"
        except grpc.RpcError as e:
            result["code"] = e.code().name
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                result["details"] = e.details()

    threads = [threading.Thread(target=run, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = {"watches": results}
    try:
        out["check"] = {"code": "OK", "status": status_of(check(request(service), timeout=10))}
    except grpc.RpcError as e:
        out["check"] = {"code": e.code().name, "details": e.details()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
