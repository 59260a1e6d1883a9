"""A loopback HTTP proxy in front of a test server that answers chosen sign-ins as
the service does when too many are checked at once (429, `retryable: true`,
`Retry-After`), and passes every other request through unchanged: the network
a README reader's shell meets when others sign in at the same moment."""

import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUSY_BODY = json.dumps(
    {
        "success": False,
        "code": "TOO_MANY_REQUESTS",
        "message": "Too many sign-ins are being checked right now; try again shortly.",
        "retryable": True,
    }
).encode()


# Headers of the hop, or that the proxy writes itself.
NOT_PASSED_ON = frozenset({"connection", "transfer-encoding", "content-length", "server", "date"})


@dataclass
class BusyProxy:
    port: int = 0
    # Which sign-ins (POST /v1/auth/login, counted from 1) are answered 429.
    refuse: frozenset[int] = frozenset()
    retry_after: str = "1"
    logins: int = 0
    refused: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextmanager
def busy_proxy(upstream_port: int, refuse: set[int], retry_after: str = "1") -> Iterator[BusyProxy]:
    """A proxy to 127.0.0.1:`upstream_port` on a free loopback port."""
    proxy = BusyProxy(refuse=frozenset(refuse), retry_after=retry_after)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _refused(self) -> bool:
            if self.command != "POST" or self.path.split("?", 1)[0] != "/v1/auth/login":
                return False
            with proxy.lock:
                proxy.logins += 1
                if proxy.logins not in proxy.refuse:
                    return False
                proxy.refused.append(proxy.logins)
            return True

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self._refused():
                self.send_response(429)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", proxy.retry_after)
                self.send_header("Content-Length", str(len(BUSY_BODY)))
                self.end_headers()
                self.wfile.write(BUSY_BODY)
                return
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                answer = upstream.getresponse()
                content = answer.read()
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in NOT_PASSED_ON:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
            finally:
                upstream.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward  # noqa: N815 - http.server names

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    proxy.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
