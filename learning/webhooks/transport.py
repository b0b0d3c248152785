"""How a webhook is sent: the target check and a signed POST pinned to the checked address.

Targets must be http(s) URLs whose host resolves only to public addresses, unless
`TALLY_WEBHOOK_ALLOW_INTERNAL` is on. The check runs when a webhook is saved and again at every
attempt, and the request is sent to the address that was checked (the connection is pinned to it,
with the original host name for `Host` and TLS), so a DNS answer that changes in between (DNS
rebinding) cannot redirect a delivery inside the network. Redirects are never followed.
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


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


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
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError) as exc:
        raise TargetRefused(f"The host {parts.hostname!r} does not resolve.") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_internal:
        internal = [a for a in addresses if not _is_public(a)]
        if internal:
            raise TargetRefused(
                f"The host resolves to an internal address ({internal[0]}); "
                "webhooks may only target public addresses."
            )
    return addresses


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to a checked address; `Host` stays the URL's host name."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to a checked address, verifying the certificate against the URL's host name."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
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
