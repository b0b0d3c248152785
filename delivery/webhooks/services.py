"""Writes of a project's webhooks: create, change, delete (the target is checked on save)."""

from __future__ import annotations

import re
import secrets

from django.db import transaction

from annotation.models import Project
from common.exceptions import Conflict, InvalidInput
from delivery.models import Webhook
from delivery.webhooks.transport import TargetRefused, target_check

MAX_WEBHOOKS_PER_PROJECT = 10
MIN_SECRET, MAX_SECRET = 16, 200


# Inside a URL: white space and control characters. URL parsers drop a CR, LF or tab silently
# (urlsplit too, so the target check passed), but the stored URL kept them, for every place that
# writes it (a request line, a log, a page) to break lines with.
_NOT_IN_URL = re.compile(r"[\x00-\x20\x7f-\x9f\u2028\u2029]")


def _clean_url(url) -> str:
    if not isinstance(url, str) or not url.strip() or len(url) > 500:
        raise InvalidInput("Invalid webhook.", fields={"url": ["A URL of at most 500 characters."]})
    url = url.strip()
    if found := _NOT_IN_URL.search(url):
        char = found.group()
        what = (
            "a space" if char == " " else f"a line break or control character (U+{ord(char):04X})"
        )
        message = f"The URL contains {what}; a URL has none (percent-encode what belongs in it)."
        raise InvalidInput("Invalid webhook.", fields={"url": [message]})
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
