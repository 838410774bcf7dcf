#!/usr/bin/python3
"""A client that knows nothing of wctmon but what server reflection tells it, as grpcurl or
grpcui work: no .proto file, no generated code. Python's grpcio and protobuf (Debian's).

Usage: reflection_client.py TARGET TOKEN_FILE VERSION
  TARGET      "unix:/path/api.sock" or "127.0.0.1:PORT"
  TOKEN_FILE  sent as "authorization: Bearer TOKEN"
  VERSION     "v1" or "v1alpha": which reflection service to ask

Lists the services, fetches the file of each (with its imports), builds every method's request
type from those descriptors alone, and calls every method with an empty request (a server
stream: its first message, within a second). Prints one JSON object:
  {"services": [...], "methods": {"/pkg.Service/Method": {"code": "OK" | status name,
   "input": "pkg.Request", "output": "pkg.Response", "fields": N}}, "errors": [...]}
"errors" lists what reflection could not answer (a missing symbol, a file that does not parse).
"""
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# The two fields of ServerReflectionRequest / Response this client needs, encoded by hand: the
# client has no descriptors of reflection itself either.


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def fields(raw):
    """(number, wire type, value) of each field of a message: bytes for length-delimited ones."""
    i = 0
    while i < len(raw):
        key, i = read_varint(raw, i)
        number, wire = key >> 3, key & 7
        if wire == 2:
            n, i = read_varint(raw, i)
            yield number, wire, raw[i:i + n]
            i += n
        elif wire == 0:
            v, i = read_varint(raw, i)
            yield number, wire, v
        else:
            raise ValueError("unexpected wire type %d" % wire)


def read_varint(raw, i):
    n = shift = 0
    while True:
        b = raw[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def identity(x):
    return x


class Reflection:
    def __init__(self, channel, version):
        self.info = channel.stream_stream(
            "/grpc.reflection.%s.ServerReflection/ServerReflectionInfo" % version,
            request_serializer=identity, response_deserializer=identity)

    def ask(self, request):
        """The one response to `request`: its message_response field (number, bytes)."""
        responses = list(self.info(iter([request]), timeout=10))
        for number, _, value in fields(responses[0]):
            if number in (4, 5, 6, 7):
                return number, value
        raise ValueError("a response with no answer")

    def services(self):
        number, value = self.ask(field(7, b""))  # list_services
        assert number == 6, "list_services answered with field %d" % number
        return [dict((n, v) for n, _, v in fields(s))[1].decode()
                for n, _, s in fields(value) if n == 1]

    def files_of(self, symbol):
        """The serialized FileDescriptorProtos of the file declaring `symbol`, with its imports."""
        number, value = self.ask(field(4, symbol.encode()))  # file_containing_symbol
        if number == 7:
            error = dict((n, v) for n, _, v in fields(value))
            raise LookupError("%s: %s (code %s)" % (symbol, error.get(2, b"").decode(),
                                                     error.get(1)))
        return [v for n, _, v in fields(value) if n == 1]


def add_files(pool, serialized):
    """Adds the files to `pool`, imports first."""
    protos = {}
    for raw in serialized:
        p = descriptor_pb2.FileDescriptorProto.FromString(raw)
        protos[p.name] = p
    added = set()

    def add(name):
        if name in added:
            return
        added.add(name)
        p = protos.get(name)
        if p is None:
            pool.FindFileByName(name)  # must be there already
            return
        for dep in p.dependency:
            add(dep)
        try:
            pool.FindFileByName(name)
        except KeyError:
            pool.Add(p)

    for name in protos:
        add(name)


def main():
    target, token_file, version = sys.argv[1:4]
    with open(token_file) as f:
        metadata = [("authorization", "Bearer " + f.read().strip())]
    channel = grpc.insecure_channel(target)
    reflection = Reflection(channel, version)
    pool = descriptor_pool.DescriptorPool()
    result = {"services": reflection.services(), "methods": {}, "errors": []}
    for service in result["services"]:
        try:
            add_files(pool, reflection.files_of(service))
            descriptor = pool.FindServiceByName(service)
        except (LookupError, KeyError, TypeError) as e:
            result["errors"].append(str(e))
            continue
        for method in descriptor.methods:
            path = "/%s/%s" % (service, method.name)
            request_class = message_factory.MessageFactory(pool).GetPrototype(method.input_type)
            response_class = message_factory.MessageFactory(pool).GetPrototype(
                method.output_type)
            entry = {"input": method.input_type.full_name,
                     "output": method.output_type.full_name,
                     "fields": len(method.input_type.fields)}
            request = request_class()
            if method.input_type.full_name.endswith("ServerReflectionRequest"):
                request.list_services = ""  # a bidi stream: one request, one answer
            try:
                if method.client_streaming:
                    call = channel.stream_stream(path, request_class.SerializeToString,
                                                 response_class.FromString)
                    next(iter(call(iter([request]), metadata=metadata, timeout=5)))
                elif method.server_streaming:
                    call = channel.unary_stream(path, request_class.SerializeToString,
                                                response_class.FromString)
                    stream = call(request, metadata=metadata, timeout=5)
                    try:
                        next(iter(stream))
                    finally:
                        stream.cancel()
                else:
                    call = channel.unary_unary(path, request_class.SerializeToString,
                                               response_class.FromString)
                    call(request, metadata=metadata, timeout=10)
                entry["code"] = "OK"
            except grpc.RpcError as e:
                entry["code"] = e.code().name
                entry["details"] = e.details()
            result["methods"][path] = entry
    print(json.dumps(result))


if __name__ == "__main__":
    main()
