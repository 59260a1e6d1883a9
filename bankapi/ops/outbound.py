"""The one way this service opens an HTTP connection to a URL someone gave it.

Webhook endpoints are URLs an integrator chooses, fetched by our own servers: left
unchecked they reach whatever our network can, the cloud metadata service at
169.254.169.254 included. So every such URL passes `url_check`, and the request is
sent by `post` to an address that check approved:

- In a deployment: `https` only, to a host whose every address is public.
- In a development run or the embedded default: `http` too, and loopback
  receivers (127.0.0.0/8, ::1, localhost), for a receiver on the developer's machine.
- Everywhere: private, link-local, shared, unspecified, multicast and reserved
  addresses are refused, and so are IPv6 forms that carry such an IPv4 address
  (IPv4-mapped, IPv4-compatible, 6to4, NAT64) and IPv4 hosts not written as four
  plain decimal numbers (`2130706433`, `0177.0.0.1`, `127.1`).

The name is resolved once per request, by `url_check`; the connection goes to an
address it approved, never to a second answer of the name server (a name that
answers a public address to the check and 127.0.0.1 to the connection is the DNS
rebinding attack). TLS still sends and verifies the name. Redirects are never
followed.

`resolve` and `connect` are the two places this module touches the network.
"""

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import NewConnectionError

from bankapi.errors import validation_error

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# The last label of a host decides whether it is an IPv4 address (as browsers
# and inet_aton read it): digits, or 0x and hex digits.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")

REFUSED_ADDRESS = (
    "url must point at a public address: loopback, private, link-local, shared, "
    "multicast and reserved addresses are refused."
)


def local_receivers_allowed() -> bool:
    """Whether http and loopback receivers are taken: on the embedded default and
    in development runs, and in a deployment only with `WEBHOOKS_ALLOW_LOOPBACK`
    (for benches and tests on one host). Private, link-local and other
    addresses stay refused whatever it says."""
    return not settings.PRODUCTION or settings.WEBHOOKS_ALLOW_LOOPBACK


@dataclass(frozen=True)
class Target:
    """A URL that passed the check, with the addresses its host had then."""

    scheme: str
    host: str  # as sent in Host and TLS: IDNA-encoded, no brackets
    port: int
    path: str  # path and query
    addresses: tuple[str, ...]


class SendFailed(Exception):
    """The request was not answered: refused, timed out, TLS failed..."""


def system_resolve(host: str, port: int) -> list[str]:
    """Every address the name server gives for the host (never called for a literal)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def system_connect(address: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to an address (never a name: nothing is resolved here)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


# The network, looked up at each call: tests put a fake name server and a
# loopback-only wire here.
resolve = system_resolve
connect = system_connect


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_allowed(address: IPAddress, *, loopback: bool) -> bool:
    """Whether a receiver may sit at this address (`loopback`: local receivers allowed)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            # An IPv4 address in IPv6 clothing is judged as itself, and never as a
            # local receiver: nobody's development receiver is spelled that way.
            return address_allowed(embedded, loopback=False)
    if address.is_loopback:
        return loopback
    # Python counts multicast as global; a webhook has one receiver.
    return address.is_global and not address.is_multicast


def _literal(host: str) -> IPAddress | None:
    """The host as an IP address, None for a name; odd IPv4 spellings are refused."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise validation_error("url", "url's host is not a valid IPv6 address.")
    if _NUMERIC_LABEL.fullmatch(host.rstrip(".").rsplit(".", 1)[-1]):
        try:
            return ipaddress.IPv4Address(host)
        except ValueError:
            raise validation_error(
                "url", "url's IPv4 host must be written as four decimal numbers from 0 to 255."
            )
    return None


def url_check(url: str) -> Target:
    """The URL, if this service may send to it now; else 400 VALIDATION_ERROR naming `url`.

    Resolves the host (once) and checks every address it has: one refused address
    refuses the URL, since the connection could go to any of them.
    """
    local = local_receivers_allowed()
    schemes = ["https", "http"] if local else ["https"]
    described = " or ".join(schemes)
    try:
        # Django's URL rules, as for every other URL the API takes: `https://0.com*` is none.
        URLValidator(schemes=schemes)(url)
    except DjangoValidationError:
        raise validation_error("url", f"url must be an absolute {described} URL.")
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        # Django's rules take any 5 digits; urllib refuses a port above 65535.
        raise validation_error("url", "url's port must be from 0 to 65535.")
    if not parts.hostname:
        raise validation_error("url", f"url must be an absolute {described} URL.")
    port = port or (443 if parts.scheme.lower() == "https" else 80)
    literal = _literal(parts.hostname)
    if literal is not None:
        host, found = str(literal), [literal]
    else:
        try:
            host = parts.hostname.encode("idna").decode("ascii")
            found = [ipaddress.ip_address(answer) for answer in resolve(host, port)]
        except (OSError, UnicodeError, ValueError):
            raise validation_error("url", "url's host cannot be resolved.")
    if not found or not all(address_allowed(address, loopback=local) for address in found):
        raise validation_error("url", REFUSED_ADDRESS)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme.lower(), host, port, path, tuple(str(address) for address in found))


class _PinnedMixin:
    """A connection that goes to the checked addresses instead of resolving the host.

    The host stays the URL's name, so the Host header, TLS SNI and the
    certificate check all use it.
    """

    host: str
    port: int
    timeout: Any

    def __init__(self, *args: Any, addresses: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.addresses = addresses

    def _new_conn(self) -> socket.socket:
        timeout = self.timeout if isinstance(self.timeout, int | float) else None
        failure: OSError | None = None
        for address in self.addresses:
            try:
                return connect(address, self.port, timeout)
            except OSError as error:
                failure = error
        raise NewConnectionError(self, f"Failed to establish a new connection: {failure}")  # type: ignore[arg-type]


class _PinnedHTTPConnection(_PinnedMixin, HTTPConnection):
    pass


class _PinnedHTTPSConnection(_PinnedMixin, HTTPSConnection):
    pass


class _PinnedHTTPConnectionPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _PinnedHTTPConnection


class _PinnedHTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _PinnedHTTPSConnection


# A kept connection is reused only after its whole answer was read; a receiver
# answering more than this (a webhook needs only the status) loses its connection
# instead of making us read on.
_REUSE_BODY_LIMIT = 64 * 1024


class Connections:
    """Open connections kept between the posts of one sender (a drain of one
    endpoint), so consecutive posts to one receiver share a TCP and TLS session.

    A connection is kept per checked target: scheme, name, port and the exact
    addresses the check approved. Every post is still checked first; when a name
    comes to resolve elsewhere, its new addresses make a new pool, and no kept
    connection ever serves an address the latest check did not approve. Not for
    use by two threads at once.
    """

    def __init__(self) -> None:
        self._pools: dict[tuple, urllib3.HTTPConnectionPool] = {}

    def pool(self, target: Target, timeout: float) -> urllib3.HTTPConnectionPool:
        key = (target.scheme, target.host, target.port, target.addresses, timeout)
        if key not in self._pools:
            self._pools[key] = _pool(target, timeout)
        return self._pools[key]

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


def _pool(target: Target, timeout: float) -> urllib3.HTTPConnectionPool:
    pool_class = _PinnedHTTPSConnectionPool if target.scheme == "https" else _PinnedHTTPConnectionPool
    return pool_class(
        target.host,
        target.port,
        timeout=urllib3.Timeout(total=timeout),
        retries=False,
        maxsize=1,
        addresses=target.addresses,
    )


def post(
    target: Target,
    *,
    body: bytes,
    headers: dict[str, str],
    timeout: float,
    connections: Connections | None = None,
) -> int:
    """POST to a checked target; answers the status code (a redirect is an answer too,
    not followed). Raises SendFailed when there is no answer.

    With `connections` the connection stays open for the next post to the same
    checked target; without, it is closed here."""
    pool = connections.pool(target, timeout) if connections is not None else _pool(target, timeout)
    try:
        response = pool.urlopen(
            "POST",
            target.path,
            body=body,
            headers=headers,
            redirect=False,
            retries=False,
            assert_same_host=False,
            preload_content=False,
            release_conn=False,
        )
        status = int(response.status)
        _finish(response, keep=connections is not None)
        return status
    except urllib3.exceptions.HTTPError as error:
        raise SendFailed(f"{type(error).__name__}: {error}") from error
    finally:
        if connections is None:
            pool.close()


def _finish(response: Any, *, keep: bool) -> None:
    """Hand the connection back to its pool. The status is all a webhook receiver
    says: without a keeper its body is not read at all; with one, a short body is
    read so the connection can serve the next post, and anything else (a long
    body, one that stalls) closes it."""
    reusable = False
    if keep:
        try:
            reusable = len(response.read(_REUSE_BODY_LIMIT + 1)) <= _REUSE_BODY_LIMIT
        except urllib3.exceptions.HTTPError:
            reusable = False
    if not reusable:
        response.close()
    response.release_conn()
