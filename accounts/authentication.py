"""`Authorization: Token <key>` for the API: DRF's header rules, Tally's tokens (one per device,
stored as a digest, expiring: accounts.models.ApiToken). `request.auth` is the token, so that a
sign-out can revoke the one it came with."""

from __future__ import annotations

from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from accounts.models import ApiToken, token_digest

EXPIRED = "Token expired: sign in again (POST /api/auth/login/)."


def token_user(key: str):
    """(user, token) for an API key, or `AuthenticationFailed` saying why not."""
    token = ApiToken.objects.select_related("user").filter(digest=token_digest(key)).first()
    if token is None:
        raise AuthenticationFailed("Invalid token.")
    if token.expires_at <= timezone.now():
        raise AuthenticationFailed(EXPIRED)
    if not token.user.is_active:  # as the annotator's statements on PostgreSQL answer it
        raise AuthenticationFailed("Invalid token.")
    return token.user, token


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        return token_user(key)
