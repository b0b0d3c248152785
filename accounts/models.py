"""API tokens, one per device, and the browser sessions an account has signed in with."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone


def token_digest(key: str) -> str:
    """What is stored of a token: its SHA-256, so that a copy of the database holds no key that
    signs in (PostgreSQL computes the same in the annotator's statements: annotation.hotpath)."""
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """One device's API token (`Authorization: Token <key>`). The key is shown once, when it is
    issued; it stops working at `expires_at` (`TALLY_API_TOKEN_DAYS` after its issue), when it
    is revoked (by its owner, by signing out with it, or at a password change or reset), and,
    when it was issued to a signed-in browser (`session_key`), when that browser signs out."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8, help_text="The key's first characters, to tell it.")
    name = models.CharField(max_length=100, blank=True, default="")
    session_key = models.CharField(max_length=40, blank=True, default="", db_index=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"], name="apitoken_user_created")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'}) of user {self.user_id}"


class BrowserSession(models.Model):
    """A browser session an account signed in with (every door calls Django's `login()`, which
    records it here: accounts/apps.py), so that "sign out everywhere" can end them all."""

    session_key = models.CharField(max_length=40, primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="browser_sessions"
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"session of user {self.user_id} since {self.created_at:%Y-%m-%d %H:%M}"
