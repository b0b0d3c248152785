"""Reads of accounts: a user's API tokens."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import ApiToken


def tokens_of_user(*, user) -> QuerySet[ApiToken]:
    """The user's tokens that still work, newest first."""
    return ApiToken.objects.filter(user=user, expires_at__gt=timezone.now()).order_by(
        "-created_at", "-pk"
    )


def token_out(token: ApiToken, *, current: int | None) -> dict:
    return {
        "id": token.pk,
        "name": token.name,
        "prefix": token.prefix,
        "created_at": token.created_at,
        "expires_at": token.expires_at,
        "browser_session": bool(token.session_key),
        "current": token.pk == current,
    }
