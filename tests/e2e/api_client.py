#!/usr/bin/python3
"""An independent client of wctmon's API, as any user would write one: Python's grpcio (Debian's
python3-grpcio), with stubs generated here from the .proto files by protoc and
grpc_python_plugin. Nothing of wctmon's own code is used.

Usage: api_client.py [OPTIONS] PROTO_DIR WORK_DIR TARGET TOKEN_FILE CALL [JSON_REQUEST]
  TARGET      "unix:/path/api.sock" or "127.0.0.1:PORT"
  TOKEN_FILE  the token to send as "authorization: Bearer TOKEN"; "-" for none
  CALL        a method of wctmon.v1.Monitor (GetStatus, ListTargets, ...), or "health"
              (grpc.health.v1.Health/Check of the whole server) or "reflection" (the services
              server reflection lists), or "watch" (WatchIncidents, one line per event), or
              "utf8-canary" (no call: whether this Python's protobuf refuses a string field that
              is not UTF-8, which is what makes every parse below a check of the server's strings)
Prints one JSON object: {"code": "OK", "response": {...}} or {"code": "NAME", "details": "..."}.
JSON escapes control characters and, here, every non-ASCII character: the output is ASCII.

Options (before or among the arguments):
  --root-ca=FILE      TLS, trusting the CA certificates in FILE (PEM)
  --cert=FILE --key=FILE
                      with TLS, present this client certificate and key (PEM)
  --server-name=NAME  with TLS, expect the server's certificate to name NAME, not the target's host
  --timeout=SECONDS   the call's deadline (default 30; may be fractional: 0.000001 is 1 us)
  --connected         connect (at most 10 s) before the call, so that a short --timeout is the
                      call's own and not spent on connecting
  --raw=HEX           send these bytes as the request, unchecked; CALL is a method of
                      wctmon.v1.Monitor or a whole path "/package.Service/Method". The response
                      comes as "wire" (hex), and as "response" when CALL is a Monitor method.
  --repeat=N          with --raw, the bytes N times over (oversize requests)
  --wire              also "wire": the response's bytes in hex, as the server sent them, parsed
                      here explicitly with the generated message class (watch: per event), and
                      "ill_formed_strings": the string fields of those bytes, read off the wire
                      format field by field, that are not well-formed UTF-8 (hex)

"watch" takes {"events": N, "window": BYTES, "pause": SECONDS, "pause_until": PATH} (all optional):
it prints
{"subscribed": true} once the server has answered, then each event as it comes, one JSON object
per line, until N events or the end of the stream, then the final {"code": ...}. With "pause",
nothing is read for that long after subscribing (a slow client), with "pause_until" nothing until
PATH exists (at most a minute); "window" sets the HTTP/2 window
the client grants, so that a client that does not read holds the server back at once.
"""
import importlib
import json
import os
import shutil
import subprocess
import sys

import grpc

OPTIONS = ("root-ca", "cert", "key", "server-name", "timeout", "connected", "raw", "repeat",
           "wire")


def stubs(proto_dir, work_dir):
    out = os.path.join(work_dir, "pystubs")
    if not os.path.exists(os.path.join(out, "wctmon", "v1", "monitor_pb2_grpc.py")):
        # Made aside, then renamed whole: clients started at once never import half a file.
        tmp = "%s.%d" % (out, os.getpid())
        os.makedirs(tmp, exist_ok=True)
        protos = [os.path.join("wctmon", "v1", p)
                  for p in ("wait_chain.proto", "incident.proto", "monitor.proto")]
        subprocess.run(["protoc", "-I", proto_dir, "-I", "/usr/include", "--python_out", tmp,
                        "--grpc_out", tmp, "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                        *protos], check=True, cwd=proto_dir)
        for d in (os.path.join(tmp, "wctmon"), os.path.join(tmp, "wctmon", "v1")):
            open(os.path.join(d, "__init__.py"), "a").close()
        try:
            os.rename(tmp, out)
        except OSError:  # another client was first
            shutil.rmtree(tmp, ignore_errors=True)
    sys.path.insert(0, out)
    return (importlib.import_module("wctmon.v1.monitor_pb2"),
            importlib.import_module("wctmon.v1.monitor_pb2_grpc"))


def parse_args(argv):
    """The options (name -> value, True for a flag) and the positional arguments."""
    options, positional = {}, []
    for arg in argv:
        name = arg[2:].split("=", 1)[0] if arg.startswith("--") else None
        if name in OPTIONS:
            options[name] = arg.split("=", 1)[1] if "=" in arg else True
        else:
            positional.append(arg)
    return options, positional


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make_channel(target, options, channel_options):
    if "root-ca" not in options:
        return grpc.insecure_channel(target, options=channel_options)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=read(options["root-ca"]),
        private_key=read(options["key"]) if "key" in options else None,
        certificate_chain=read(options["cert"]) if "cert" in options else None)
    if "server-name" in options:
        channel_options = channel_options + [("grpc.ssl_target_name_override",
                                              options["server-name"])]
    return grpc.secure_channel(target, credentials, options=channel_options)


def identity(b):
    return b


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def ill_formed_strings(descriptor, data):
    """The string fields of message `descriptor` in `data`, at any depth, that are not
    well-formed UTF-8 (Python's strict decoder refuses overlongs, surrogates and code points past
    U+10FFFF), as hex. Read off the wire format itself, so that what the protobuf runtime would
    accept or repair plays no part; integers, whose varints may hold any bytes, are skipped."""
    from google.protobuf.descriptor import FieldDescriptor
    bad, at = [], 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, at = varint(data, at)
        elif wire_type == 1:
            at += 8
        elif wire_type == 5:
            at += 4
        elif wire_type == 2:
            size, at = varint(data, at)
            value, at = data[at:at + size], at + size
            field = descriptor.fields_by_number.get(number)
            if field is None:
                continue
            if field.type == FieldDescriptor.TYPE_STRING:
                try:
                    value.decode("utf-8", "strict")
                except UnicodeDecodeError:
                    bad.append(value.hex())
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                bad += ill_formed_strings(field.message_type, value)
        else:
            raise SystemExit("wire type %d in %s" % (wire_type, descriptor.full_name))
    return bad


def method_of(messages, call):
    """The descriptor and request/response classes of a Monitor method (None when not one)."""
    descriptor = messages.DESCRIPTOR.services_by_name["Monitor"].methods_by_name.get(call)
    if descriptor is None:
        return None, None, None
    from google.protobuf import symbol_database
    database = symbol_database.Default()
    return (descriptor, database.GetSymbol(descriptor.input_type.full_name),
            database.GetSymbol(descriptor.output_type.full_name))


def to_dict(message):
    from google.protobuf import json_format
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def utf8_canary(messages):
    """Whether the protobuf of this Python refuses ill-formed UTF-8 in a proto3 string field:
    ServiceStatus.version (field 1) as an overlong '/' and as a surrogate; and accepts the same
    field well-formed."""
    from google.protobuf.message import DecodeError
    refused = []
    for bad in (b"\xc0\xaf", b"\xed\xa0\x80"):
        try:
            messages.ServiceStatus.FromString(b"\x0a" + bytes([len(bad)]) + bad)
            refused.append(False)
        except DecodeError:
            refused.append(True)
    good = messages.ServiceStatus.FromString(b"\x0a\x03\xef\xbf\xbd").version == "\ufffd"
    from google.protobuf.internal import api_implementation
    return {"refuses_ill_formed": all(refused), "accepts_well_formed": good,
            "implementation": api_implementation.Type()}


def main():
    options, args = parse_args(sys.argv[1:])
    proto_dir, work_dir, target, token_file, call = args[0:5]
    request_json = args[5] if len(args) > 5 else "{}"
    timeout = float(options.get("timeout", 30))
    metadata = []
    if token_file != "-":
        with open(token_file) as f:
            metadata.append(("authorization", "Bearer " + f.read().strip()))
    channel_options = []
    if call == "watch":
        window = (json.loads(request_json) or {}).get("window")
        if window:
            channel_options = [("grpc.http2.lookahead_bytes", window), ("grpc.http2.bdp_probe", 0)]
    channel = make_channel(target, options, channel_options)
    try:
        if "connected" in options:
            grpc.channel_ready_future(channel).result(timeout=10)
        if call == "health":
            check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                        request_serializer=identity,
                                        response_deserializer=identity)
            raw = check(b"", timeout=float(options.get("timeout", 10)))
            # HealthCheckResponse: field 1, varint; 1 = SERVING, 2 = NOT_SERVING.
            status = {b"\x08\x01": "SERVING", b"\x08\x02": "NOT_SERVING"}.get(raw, raw.hex())
            print(json.dumps({"code": "OK", "response": {"status": status}}))
            return
        if call == "reflection":
            info = channel.stream_stream(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                request_serializer=identity, response_deserializer=identity)
            # ServerReflectionRequest { list_services = 7: "" }
            raw = b"".join(info(iter([b"\x3a\x00"]), timeout=float(options.get("timeout", 10))))
            names = [n for n in ("wctmon.v1.Monitor", "grpc.health.v1.Health")
                     if n.encode() in raw]
            print(json.dumps({"code": "OK", "response": {"services": names}}))
            return
        from google.protobuf import json_format
        messages, services = stubs(proto_dir, work_dir)
        if call == "utf8-canary":
            print(json.dumps({"code": "OK", "response": utf8_canary(messages)}))
            return
        if "raw" in options:
            raw_call(channel, messages, call, options, metadata, timeout)
            return
        if call == "watch":
            watch(channel, messages, metadata, json.loads(request_json) or {}, "wire" in options)
            return
        descriptor, request_class, response_class = method_of(messages, call)
        if descriptor is None:
            raise SystemExit("no method %s in wctmon.v1.Monitor" % call)
        request = json_format.Parse(request_json, request_class())
        path = "/wctmon.v1.Monitor/" + call
        wire = "wire" in options
        # With --wire the bytes come as they are and are parsed here; otherwise grpcio parses
        # them with the same generated class (FromString).
        deserialize = identity if wire else response_class.FromString
        if descriptor.server_streaming:
            method = channel.unary_stream(path, request_serializer=request_class.SerializeToString,
                                          response_deserializer=deserialize)
        else:
            method = channel.unary_unary(path, request_serializer=request_class.SerializeToString,
                                         response_deserializer=deserialize)
        response = method(request, metadata=metadata, timeout=timeout)
        result = {"code": "OK"}
        if descriptor.server_streaming:
            response = list(response)
            if wire:
                result["wire"] = [r.hex() for r in response]
                result["ill_formed_strings"] = [
                    b for r in response for b in ill_formed_strings(response_class.DESCRIPTOR, r)]
                response = [response_class.FromString(r) for r in response]
            result["response"] = [to_dict(m) for m in response]
        else:
            if wire:
                result["wire"] = response.hex()
                result["ill_formed_strings"] = ill_formed_strings(response_class.DESCRIPTOR,
                                                                  response)
                response = response_class.FromString(response)
            result["response"] = to_dict(response)
        print(json.dumps(result))
    except grpc.RpcError as e:
        print(json.dumps({"code": e.code().name, "details": e.details()}))


def raw_call(channel, messages, call, options, metadata, timeout):
    """Sends --raw's bytes (--repeat times) to CALL as they are."""
    request = bytes.fromhex(options["raw"]) * int(options.get("repeat", 1))
    path = call if call.startswith("/") else "/wctmon.v1.Monitor/" + call
    method = channel.unary_unary(path, request_serializer=identity,
                                 response_deserializer=identity)
    raw = method(request, metadata=metadata, timeout=timeout)
    result = {"code": "OK", "wire": raw.hex()}
    _, _, response_class = method_of(messages, path.rsplit("/", 1)[1])
    if response_class is not None and path.startswith("/wctmon.v1.Monitor/"):
        result["response"] = to_dict(response_class.FromString(raw))
    print(json.dumps(result))


def watch(channel, messages, metadata, options, wire):
    import time
    event_class = messages.IncidentEvent
    stream = channel.unary_stream(
        "/wctmon.v1.Monitor/WatchIncidents",
        request_serializer=messages.WatchIncidentsRequest.SerializeToString,
        response_deserializer=identity if wire else event_class.FromString)(
            messages.WatchIncidentsRequest(), metadata=metadata)
    stream.initial_metadata()
    print(json.dumps({"subscribed": True}), flush=True)
    time.sleep(options.get("pause", 0))
    if "pause_until" in options:
        give_up = time.monotonic() + 60
        while not os.path.exists(options["pause_until"]) and time.monotonic() < give_up:
            time.sleep(0.05)
    left = options.get("events")
    for event in stream:
        line = {}
        if wire:
            line["wire"] = event.hex()
            line["ill_formed_strings"] = ill_formed_strings(event_class.DESCRIPTOR, event)
            event = event_class.FromString(event)
        line.update(to_dict(event))
        print(json.dumps(line), flush=True)
        if left is not None:
            left -= 1
            if left == 0:
                stream.cancel()
                print(json.dumps({"code": "OK"}), flush=True)
                return
    print(json.dumps({"code": "OK"}), flush=True)


if __name__ == "__main__":
    main()
