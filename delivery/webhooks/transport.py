"""How a webhook is sent: the target check and a signed POST pinned to the checked address.

Targets must be http(s) URLs on a port in 1..65535 whose host resolves only to globally
routable addresses, unless `TALLY_WEBHOOK_ALLOW_INTERNAL` is on. An IPv6 address that carries an
IPv4 one (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo) is judged by
the IPv4 address it leads to as well. The check runs when a webhook is saved and again at every
attempt, and the request is sent to the address that was checked (the connection is pinned to
it, with the original host name for `Host` and TLS) and checked once more as the socket's peer,
so a DNS answer that changes in between (DNS rebinding) cannot redirect a delivery inside the
network. Redirects are never followed.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import socket
import ssl
from urllib.parse import urlsplit

from django.conf import settings

TIMEOUT_SECONDS = 5.0
SIGNATURE_HEADER = "X-Tally-Signature"


def signature(secret: str, body: bytes) -> str:
    """`sha256=<hex HMAC-SHA256 of the body>` — the value of `X-Tally-Signature`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class TargetRefused(Exception):
    """The URL may not be used as a webhook target (the message says why)."""


# Not globally routable, whatever a Python version's `is_global` says of them: all of the IETF
# protocol assignments block (192.0.0.8 among them), shared address space, local-use NAT64.
_NEVER_GLOBAL = [ipaddress.ip_network(network) for network in ("192.0.0.0/24", "100.64.0.0/10")]
# IPv6 targets must be global unicast (2000::/3), or carry an IPv4 address the way a dual-stack
# socket (IPv4-mapped) or a NAT64 gateway (64:ff9b::/96) reaches it. Everything else is refused
# outright: IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, site-local fec0::/10,
# local-use NAT64 64:ff9b:1::/48, unique-local, link-local, multicast.
_IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_REFUSAL_HINT = "set TALLY_WEBHOOK_ALLOW_INTERNAL=1 to allow internal targets"


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to (none for a plain IPv6 address)."""
    found = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:  # 2002:a.b.c.d::/48
        found.append(ip.sixtofour)
    if ip.teredo is not None:  # 2001::/32: (server, client)
        found.extend(ip.teredo)
    return found


def _is_global(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if not ip.is_global or ip.is_multicast:
        return False
    return not any(ip in network for network in _NEVER_GLOBAL if network.version == ip.version)


def is_public_address(address: str) -> bool:
    """Whether `address` is globally routable, and so is every IPv4 address inside it."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv4Address):
        return _is_global(ip)
    embedded = _embedded_ipv4(ip)
    if ip.ipv4_mapped is not None or ip in _NAT64:
        return all(_is_global(inner) for inner in embedded)
    return (
        ip in _IPV6_GLOBAL_UNICAST
        and _is_global(ip)
        and all(_is_global(inner) for inner in embedded)
    )


def target_check(url: str, *, allow_internal: bool | None = None) -> list[str]:
    """The addresses `url`'s host resolves to, all allowed; raises `TargetRefused`."""
    if allow_internal is None:
        allow_internal = settings.TALLY_WEBHOOK_ALLOW_INTERNAL
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("Only http:// and https:// URLs are allowed.")
    if not parts.hostname:
        raise TargetRefused("The URL has no host.")
    if parts.username or parts.password:
        raise TargetRefused("The URL must not contain credentials.")
    try:
        port = parts.port
    except ValueError as exc:
        raise TargetRefused("The URL's port is not a number in 1..65535.") from exc
    if port == 0:
        raise TargetRefused("The URL's port is not a number in 1..65535.")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError) as exc:
        raise TargetRefused(f"The host {parts.hostname!r} does not resolve.") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_internal:
        internal = [a for a in addresses if not is_public_address(a)]
        if internal:
            raise TargetRefused(
                f"The host resolves to an internal address ({internal[0]}); webhooks may only "
                f"target public addresses ({_REFUSAL_HINT})."
            )
    return addresses


def _connect(address: str, port: int, timeout: float) -> socket.socket:
    """A connection to a checked address, refused if the peer it reached is internal."""
    sock = socket.create_connection((address, port), timeout)
    peer = sock.getpeername()[0]
    if not settings.TALLY_WEBHOOK_ALLOW_INTERNAL and not is_public_address(peer):
        sock.close()
        raise TargetRefused(
            f"The connection reached an internal address ({peer}); webhooks may only target "
            f"public addresses ({_REFUSAL_HINT})."
        )
    return sock


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to a checked address; `Host` stays the URL's host name."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = _connect(self._address, self.port, self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to a checked address, verifying the certificate against the URL's host name."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = _connect(self._address, self.port, self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def post(url: str, address: str, body: bytes, headers: dict[str, str]) -> int:
    """POST `body` to `url`, connected to `address` (one that `target_check` allowed); the
    response's status code. Redirects are not followed."""
    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    connection_class = _PinnedHTTPSConnection if https else _PinnedHTTPConnection
    connection = connection_class(parts.hostname, address, port, TIMEOUT_SECONDS)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(65536)
        return response.status
    finally:
        connection.close()
