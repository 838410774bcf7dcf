#!/usr/bin/python3
"""An independent client of wctmon's API, as any user would write one: Python's grpcio (Debian's
python3-grpcio), with stubs generated here from the .proto files by protoc and
grpc_python_plugin. Nothing of wctmon's own code is used.

Usage: api_client.py PROTO_DIR WORK_DIR TARGET TOKEN_FILE CALL [JSON_REQUEST]
  TARGET      "unix:/path/api.sock" or "127.0.0.1:PORT"
  TOKEN_FILE  the token to send as "authorization: Bearer TOKEN"; "-" for none
  CALL        a method of wctmon.v1.Monitor (GetStatus, ListTargets, ...), or "health"
              (grpc.health.v1.Health/Check of the whole server) or "reflection" (the services
              server reflection lists), or "watch" (WatchIncidents, one line per event)
Prints one JSON object: {"code": "OK", "response": {...}} or {"code": "NAME", "details": "..."}.

"watch" takes {"events": N, "window": BYTES, "pause": SECONDS} (all optional): it prints
{"subscribed": true} once the server has answered, then each event as it comes, one JSON object
per line, until N events or the end of the stream, then the final {"code": ...}. With "pause",
nothing is read for that long after subscribing (a slow client); "window" sets the HTTP/2 window
the client grants, so that a client that does not read holds the server back at once.
"""
import importlib
import json
import os
import subprocess
import sys

import grpc


def stubs(proto_dir, work_dir):
    out = os.path.join(work_dir, "pystubs")
    if not os.path.exists(os.path.join(out, "wctmon", "v1", "monitor_pb2_grpc.py")):
        os.makedirs(out, exist_ok=True)
        protos = [os.path.join("wctmon", "v1", p)
                  for p in ("wait_chain.proto", "incident.proto", "monitor.proto")]
        subprocess.run(["protoc", "-I", proto_dir, "-I", "/usr/include", "--python_out", out,
                        "--grpc_out", out, "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                        *protos], check=True, cwd=proto_dir)
        for d in (os.path.join(out, "wctmon"), os.path.join(out, "wctmon", "v1")):
            open(os.path.join(d, "__init__.py"), "a").close()
    sys.path.insert(0, out)
    return (importlib.import_module("wctmon.v1.monitor_pb2"),
            importlib.import_module("wctmon.v1.monitor_pb2_grpc"))


def main():
    proto_dir, work_dir, target, token_file, call = sys.argv[1:6]
    request_json = sys.argv[6] if len(sys.argv) > 6 else "{}"
    metadata = []
    if token_file != "-":
        with open(token_file) as f:
            metadata.append(("authorization", "Bearer " + f.read().strip()))
    options = []
    if call == "watch":
        window = (json.loads(request_json) or {}).get("window")
        if window:
            options = [("grpc.http2.lookahead_bytes", window), ("grpc.http2.bdp_probe", 0)]
    channel = grpc.insecure_channel(target, options=options)
    try:
        if call == "health":
            check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
            raw = check(b"", timeout=10)
            # HealthCheckResponse: field 1, varint; 1 = SERVING, 2 = NOT_SERVING.
            status = {b"\x08\x01": "SERVING", b"\x08\x02": "NOT_SERVING"}.get(raw, raw.hex())
            print(json.dumps({"code": "OK", "response": {"status": status}}))
            return
        if call == "reflection":
            info = channel.stream_stream(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                request_serializer=lambda b: b, response_deserializer=lambda b: b)
            # ServerReflectionRequest { list_services = 7: "" }
            raw = b"".join(info(iter([b"\x3a\x00"]), timeout=10))
            names = [n for n in ("wctmon.v1.Monitor", "grpc.health.v1.Health")
                     if n.encode() in raw]
            print(json.dumps({"code": "OK", "response": {"services": names}}))
            return
        from google.protobuf import json_format
        messages, services = stubs(proto_dir, work_dir)
        stub = services.MonitorStub(channel)
        if call == "watch":
            watch(stub, messages, metadata, json.loads(request_json) or {}, json_format)
            return
        method = getattr(stub, call)
        descriptor = messages.DESCRIPTOR.services_by_name["Monitor"].methods_by_name[call]
        request_class = getattr(messages, descriptor.input_type.name, None)
        if request_class is None:  # a message of another file
            from google.protobuf import symbol_database
            request_class = symbol_database.Default().GetSymbol(descriptor.input_type.full_name)
        request = json_format.Parse(request_json, request_class())
        response = method(request, metadata=metadata, timeout=30)
        if descriptor.server_streaming:
            response = [json_format.MessageToDict(m, preserving_proto_field_name=True)
                        for m in response]
        else:
            response = json_format.MessageToDict(response, preserving_proto_field_name=True)
        print(json.dumps({"code": "OK", "response": response}))
    except grpc.RpcError as e:
        print(json.dumps({"code": e.code().name, "details": e.details()}))


def watch(stub, messages, metadata, options, json_format):
    import time
    stream = stub.WatchIncidents(messages.WatchIncidentsRequest(), metadata=metadata)
    stream.initial_metadata()
    print(json.dumps({"subscribed": True}), flush=True)
    time.sleep(options.get("pause", 0))
    left = options.get("events")
    for event in stream:
        print(json.dumps(json_format.MessageToDict(event, preserving_proto_field_name=True)),
              flush=True)
        if left is not None:
            left -= 1
            if left == 0:
                stream.cancel()
                print(json.dumps({"code": "OK"}), flush=True)
                return
    print(json.dumps({"code": "OK"}), flush=True)


if __name__ == "__main__":
    main()
