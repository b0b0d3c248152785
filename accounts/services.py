"""Accounts: registration, API tokens (one per device, expiring), sign-in and sign-out,
password change and reset."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.contrib.sessions.backends.base import SessionBase
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode

from accounts.backends import throttled
from accounts.models import ApiToken, BrowserSession, token_digest
from accounts.usernames import username_for_new_account
from common.exceptions import InvalidInput, NotFound

_NAME_LENGTH = 100  # a token's name, at most


def user_register(*, username: str, password: str, email: str = ""):
    """Create an account. The name is stored as every sign-in reads it (NFKC), and may not pass
    for another (`accounts.usernames`); `email` is where a password reset is sent."""
    User = get_user_model()
    user = User(username=username_for_new_account(username), email=email)
    _password_checked(password, user, field="password")
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError as exc:
        raise InvalidInput(
            "That username is taken.", fields={"username": ["Already taken."]}
        ) from exc
    return user


def _password_checked(password: str, user, *, field: str) -> None:
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise InvalidInput("Choose a stronger password.", fields={field: exc.messages}) from exc


def token_issue(*, user, name: str = "", session_key: str = "") -> ApiToken:
    """A new API token of `user` for one device, with its `key` (only its digest is stored, so
    the key is known now or never).
    It lasts `TALLY_API_TOKEN_DAYS`; the user's expired tokens go, and past
    `TALLY_API_TOKENS_PER_USER` the oldest is revoked (a script that signs in at every run
    does not pile them up). `session_key`: the signed-in browser it was issued to, whose
    sign-out revokes it."""
    now = timezone.now()
    key = secrets.token_hex(20)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
        mine = ApiToken.objects.filter(user=user)
        mine.filter(expires_at__lte=now).delete()
        keep = settings.TALLY_API_TOKENS_PER_USER - 1
        old = list(mine.order_by("-created_at", "-pk").values_list("pk", flat=True)[keep:])
        if old:
            ApiToken.objects.filter(pk__in=old).delete()
        token = ApiToken.objects.create(
            user=user,
            digest=token_digest(key),
            prefix=key[:6],
            name=name[:_NAME_LENGTH],
            session_key=session_key or "",
            created_at=now,
            expires_at=now + timedelta(days=settings.TALLY_API_TOKEN_DAYS),
        )
    token.key = key
    return token


def token_bind(*, token: ApiToken, session_key: str) -> None:
    """Tie a token to the signed-in browser session it was issued to: it is revoked when that
    session signs out."""
    if session_key:
        ApiToken.objects.filter(pk=token.pk).update(session_key=session_key)
        token.session_key = session_key


def token_login(*, request, username: str, password: str, name: str = "") -> ApiToken:
    """A new API token (with its `key`) of the user these credentials name; `SigninThrottled`
    when the sign-in throttle refused the attempt."""
    user = authenticate(request, username=username, password=password)
    if user is None and (refused := throttled(request)) is not None:
        raise refused
    if user is None or not user.is_active:
        raise InvalidInput("Wrong username or password.")
    return token_issue(user=user, name=name)


def token_revoke(*, user, token_id: int) -> None:
    """Revoke one of the user's tokens (`NotFound` for anyone else's)."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=token_id).delete()
    if not deleted:
        raise NotFound("You have no such token.")


def tokens_revoke(*, user, keep: ApiToken | None = None) -> int:
    """Revoke every token of the user but `keep`; how many."""
    tokens = ApiToken.objects.filter(user=user)
    if keep is not None:
        tokens = tokens.exclude(pk=keep.pk)
    deleted, _ = tokens.delete()
    return deleted


def sessions_end(*, user, keep: str | None = None) -> int:
    """End every browser session the user signed in with but `keep` (a session key); how many."""
    from importlib import import_module

    store: type[SessionBase] = import_module(settings.SESSION_ENGINE).SessionStore
    sessions = BrowserSession.objects.filter(user=user)
    if keep:
        sessions = sessions.exclude(session_key=keep)
    keys = list(sessions.values_list("session_key", flat=True))
    for key in keys:
        store(session_key=key).delete()
    ApiToken.objects.filter(user=user, session_key__in=keys).delete()
    sessions.filter(session_key__in=keys).delete()
    return len(keys)


def sign_out_everywhere(*, user) -> None:
    """Every token revoked and every browser session ended (the caller's too)."""
    sessions_end(user=user)
    tokens_revoke(user=user)


def on_session_signed_in(sender, request, user, **kwargs) -> None:
    """Django's `user_logged_in`: record the session (its key is new: `login()` cycles it)."""
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if not session_key or user is None:
        return
    horizon = timezone.now() - timedelta(seconds=settings.SESSION_COOKIE_AGE)
    BrowserSession.objects.filter(user=user, created_at__lt=horizon).delete()
    BrowserSession.objects.update_or_create(session_key=session_key, defaults={"user": user})


def on_session_signed_out(sender, request, user, **kwargs) -> None:
    """Django's `user_logged_out` (before the session is flushed): the tokens issued to this
    browser session are revoked with it."""
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if not session_key:
        return
    ApiToken.objects.filter(session_key=session_key).delete()
    BrowserSession.objects.filter(session_key=session_key).delete()


def password_change(
    *, user, old_password: str, new_password: str, keep_token: ApiToken | None = None
) -> None:
    """Change the user's password. Every other token is revoked; every other browser session
    ends (Django checks a session against the password it signed in with; the caller's own
    session, if any, is kept by the view: `update_session_auth_hash`)."""
    if not user.check_password(old_password):
        raise InvalidInput(
            "Your current password is not that.", fields={"old_password": ["Not your password."]}
        )
    _password_checked(new_password, user, field="new_password")
    user.set_password(new_password)
    user.save(update_fields=["password"])
    tokens_revoke(user=user, keep=keep_token)


def password_reset_send(*, email: str, request) -> None:
    """E-mail a link to set a new password to each active account with this address (Django's
    reset tokens: valid `PASSWORD_RESET_TIMEOUT`, once, and not after the password changed).
    Says nothing of whether any account has it, so it cannot tell who has an account."""
    form = PasswordResetForm(data={"email": email})
    if not form.is_valid():
        raise InvalidInput("Enter an e-mail address.", fields={"email": ["Not an address."]})
    form.save(
        request=request,
        use_https=request.is_secure(),
        subject_template_name="accounts/password_reset_subject.txt",
        email_template_name="accounts/password_reset_email.txt",
        from_email=settings.DEFAULT_FROM_EMAIL,
        extra_email_context={"timeout_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)},
    )


def password_reset_user(*, uid: str, token: str):
    """The account a reset link names, if its token is still good; else None."""
    try:
        pk = force_str(urlsafe_base64_decode(uid))
        user = get_user_model().objects.get(pk=pk, is_active=True)
    except (ValueError, OverflowError, TypeError, get_user_model().DoesNotExist):
        return None
    return user if default_token_generator.check_token(user, token) else None


def password_reset_complete(*, uid: str, token: str, new_password: str):
    """Set a new password from a reset link; every token is revoked and every session ends.
    `InvalidInput` when the link is no longer good."""
    user = password_reset_user(uid=uid, token=token)
    if user is None:
        raise InvalidInput(
            "This reset link has expired or was used already: ask for a new one.",
            fields={"token": ["Expired or used."]},
        )
    _password_checked(new_password, user, field="new_password")
    user.set_password(new_password)
    user.save(update_fields=["password"])
    sign_out_everywhere(user=user)
    return user


def email_change(*, user, password: str, email: str) -> None:
    """The address password resets are sent to (blank: none); the password confirms it."""
    if not user.check_password(password):
        raise InvalidInput(
            "That is not your password.", fields={"password": ["Not your password."]}
        )
    user.email = email
    user.save(update_fields=["email"])
