"""Per-project webhooks: validated targets, signed deliveries, a delivery log.

A delivery row is written in the same transaction as the model version it announces (an outbox);
the `webhook_deliver` task then makes one attempt per run through `delivery_attempt`, which
records the outcome and says whether (and when) to try again: exponential backoff from
`TALLY_WEBHOOK_BACKOFF_SECONDS`, `MAX_ATTEMPTS` in all.

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
import json
import logging
import secrets
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.exceptions import Conflict, InvalidInput
from annotation.models import Project
from learning.models import Webhook, WebhookDelivery

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
MAX_WEBHOOKS_PER_PROJECT = 10
TIMEOUT_SECONDS = 5.0
CLAIM_SECONDS = 60
MIN_SECRET, MAX_SECRET = 16, 200
SIGNATURE_HEADER = "X-Tally-Signature"


class TargetRefused(Exception):
    """The URL may not be used as a webhook target (the message says why)."""


def signature(secret: str, body: bytes) -> str:
    """`sha256=<hex HMAC-SHA256 of the body>` — the value of `X-Tally-Signature`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


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


def _clean_url(url) -> str:
    if not isinstance(url, str) or not url.strip() or len(url) > 500:
        raise InvalidInput("Invalid webhook.", fields={"url": ["A URL of at most 500 characters."]})
    url = url.strip()
    try:
        target_check(url)
    except TargetRefused as exc:
        raise InvalidInput("Invalid webhook.", fields={"url": [str(exc)]}) from exc
    return url


def _clean_secret(secret) -> str:
    if not isinstance(secret, str) or not MIN_SECRET <= len(secret) <= MAX_SECRET:
        raise InvalidInput(
            "Invalid webhook.",
            fields={"secret": [f"Between {MIN_SECRET} and {MAX_SECRET} characters."]},
        )
    return secret


def webhook_create(
    *, project: Project, url: str, secret: str | None = None, active: bool = True
) -> Webhook:
    url = _clean_url(url)
    secret = secrets.token_urlsafe(32) if secret is None else _clean_secret(secret)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # count safely
        if Webhook.objects.filter(project=project).count() >= MAX_WEBHOOKS_PER_PROJECT:
            raise Conflict(f"A project has at most {MAX_WEBHOOKS_PER_PROJECT} webhooks.")
        return Webhook.objects.create(project=project, url=url, secret=secret, active=active)


def webhook_update(
    *, webhook: Webhook, url: str | None = None, secret: str | None = None, active=None
) -> Webhook:
    if url is not None:
        webhook.url = _clean_url(url)
    if secret is not None:
        webhook.secret = _clean_secret(secret)
    if active is not None:
        if not isinstance(active, bool):
            raise InvalidInput("Invalid webhook.", fields={"active": ["true or false."]})
        webhook.active = active
    webhook.save(update_fields=["url", "secret", "active"])
    return webhook


def webhook_delete(*, webhook: Webhook) -> None:
    webhook.delete()


def deliveries_create(
    *, project_id: int, event: str, version_number: int | None, summary: dict
) -> list[int]:
    """One pending delivery per active webhook of the project (call inside the transaction that
    writes what the event announces)."""
    now = timezone.now()
    payload = json.loads(json.dumps(summary, cls=DjangoJSONEncoder))
    created = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            webhook=webhook,
            event=event,
            version_number=version_number,
            payload=payload,
            next_attempt_at=now,
        )
        for webhook in Webhook.objects.filter(project_id=project_id, active=True)
    )
    return [delivery.pk for delivery in created]


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


def _post(url: str, address: str, body: bytes, headers: dict[str, str]) -> int:
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


@dataclass(frozen=True)
class AttemptOutcome:
    status: str
    retry_in: float | None  # seconds until the next attempt, or None when done


def _claim(delivery_id: int, now: datetime) -> WebhookDelivery | None:
    """Take the delivery for one attempt (a conditional UPDATE, so a duplicate task message
    cannot attempt it at the same time)."""
    claimed = (
        WebhookDelivery.objects.filter(
            pk=delivery_id,
            status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING],
        )
        .filter(
            Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + timedelta(seconds=1))
        )
        .update(next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS))
    )
    if claimed != 1:
        return None
    return WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)


def backoff_seconds(attempts: int) -> float:
    """Wait after the `attempts`-th failed attempt: base · 2^(attempts − 1)."""
    return float(settings.TALLY_WEBHOOK_BACKOFF_SECONDS * 2 ** (attempts - 1))


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> AttemptOutcome:
    """Make one attempt of a delivery and record it."""
    now = now or timezone.now()
    delivery = _claim(delivery_id, now)
    if delivery is None:
        return AttemptOutcome(status="not_due", retry_in=None)
    webhook = delivery.webhook
    body = json.dumps(
        {
            **delivery.payload,
            "delivery": delivery.pk,
            "sent_at": int(time.time()),
        },
        separators=(",", ":"),
    ).encode()
    timestamp = str(json.loads(body)["sent_at"])
    code, error = None, ""
    if not webhook.active:
        error = "The webhook is disabled."
    else:
        try:
            address = target_check(webhook.url)[0]
            code = _post(
                webhook.url,
                address,
                body,
                {
                    "Content-Type": "application/json",
                    "User-Agent": "Tally-Webhook/1",
                    "X-Tally-Event": delivery.event,
                    "X-Tally-Delivery": str(delivery.pk),
                    "X-Tally-Timestamp": timestamp,
                    SIGNATURE_HEADER: signature(webhook.secret, body),
                },
            )
            if not 200 <= code < 300:
                error = f"HTTP {code}" + (
                    " (redirects are not followed)" if 300 <= code < 400 else ""
                )
        except TargetRefused as exc:
            error = f"Target refused: {exc}"
        except (OSError, http.client.HTTPException) as exc:
            error = f"{type(exc).__name__}: {exc}"
    delivery.attempts += 1
    delivery.last_attempt_at = timezone.now()
    delivery.response_code = code
    delivery.error = error[:500]
    retry_in = None
    if not error:
        delivery.status = WebhookDelivery.Status.SUCCEEDED
        delivery.delivered_at = delivery.last_attempt_at
        delivery.next_attempt_at = None
    elif delivery.attempts >= MAX_ATTEMPTS or not webhook.active:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    else:
        delivery.status = WebhookDelivery.Status.RETRYING
        retry_in = backoff_seconds(delivery.attempts)
        delivery.next_attempt_at = delivery.last_attempt_at + timedelta(seconds=retry_in)
    delivery.save(
        update_fields=[
            "attempts", "last_attempt_at", "response_code", "error", "status", "delivered_at",
            "next_attempt_at",
        ]
    )  # fmt: skip
    log = logger.info if not error else logger.warning
    log(
        "webhook delivery attempt",
        extra={
            "delivery_id": delivery.pk,
            "webhook_id": webhook.pk,
            "attempt": delivery.attempts,
            "status": delivery.status,
            "response_code": code,
            "error": error[:200],
        },
    )
    return AttemptOutcome(status=delivery.status, retry_in=retry_in)
