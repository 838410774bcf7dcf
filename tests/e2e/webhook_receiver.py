#!/usr/bin/python3
"""A web hook receiver for the alert sinks' end-to-end tests: listens on 127.0.0.1:PORT, takes
each POST whose Authorization is "Bearer TOKEN" (401 otherwise), and appends its body, one line
each, to OUTPUT. With CERT and KEY (PEM files) it serves https.

    webhook_receiver.py PORT TOKEN OUTPUT [CERT KEY]

Imported, receiver() is the same server for a test to run in a thread of its own.
"""
import http.server
import ssl
import sys


def receiver(port, on_body, token=None, cert=None, key=None):
    """An HTTP server on 127.0.0.1:PORT (0: a free port) that hands each POST's body to on_body;
    with TOKEN, only a POST whose Authorization is "Bearer TOKEN"; with CERT and KEY, https."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if token is not None and self.headers.get("Authorization") != "Bearer " + token:
                self.send_response(401)
                self.end_headers()
                return
            on_body(body)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    if cert is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def main():
    port, token, output = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    def append(body):
        with open(output, "ab") as out:
            out.write(body.replace(b"\n", b" ") + b"\n")

    cert, key = (sys.argv[4], sys.argv[5]) if len(sys.argv) == 6 else (None, None)
    receiver(port, append, token, cert, key).serve_forever()


if __name__ == "__main__":
    main()
