#!/usr/bin/python3
"""A web hook receiver for the alert sinks' end-to-end test: listens on 127.0.0.1:PORT, takes
each POST whose Authorization is "Bearer TOKEN" (401 otherwise), and appends its body, one line
each, to OUTPUT. With CERT and KEY (PEM files) it serves https.

    webhook_receiver.py PORT TOKEN OUTPUT [CERT KEY]
"""
import http.server
import ssl
import sys


def main():
    port, token, output = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Authorization") != "Bearer " + token:
                self.send_response(401)
                self.end_headers()
                return
            with open(output, "ab") as out:
                out.write(body.replace(b"\n", b" ") + b"\n")
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    if len(sys.argv) == 6:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[4], sys.argv[5])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
