"""A webhook receiver for tests: a real HTTP server on a free loopback port."""

import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    # Status codes to answer, in order; 200 once they run out.
    script: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    answered: list[int] = field(default_factory=list)
    # Seconds to wait before answering the first request (a slow receiver).
    hold_first: float = 0.0
    # TCP connections the senders opened (HTTP/1.1: one may carry many requests).
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def accepted(self) -> list[Received]:
        return [item for item, status in zip(self.received, self.answered, strict=True) if status < 300]


def start_receiver(
    script: list[int] | None = None, hold_first: float = 0.0, tls: ssl.SSLContext | None = None
) -> tuple[Receiver, ThreadingHTTPServer]:
    """`tls`: a server context; the receiver then speaks https only."""
    receiver = Receiver(url="", script=list(script or []), hold_first=hold_first)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keeps a connection open for the sender's next request

        def setup(self):
            super().setup()
            with receiver.lock:
                receiver.connections += 1

        def do_POST(self):  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with receiver.lock:
                first = not receiver.received
                status = receiver.script.pop(0) if receiver.script else 200
                receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
                receiver.answered.append(status)
            if first and receiver.hold_first:
                time.sleep(receiver.hold_first)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    receiver.url = f"{scheme}://127.0.0.1:{server.server_address[1]}/hooks"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
