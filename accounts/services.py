"""Accounts: registration with an API token, token sign-in and sign-out."""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from accounts.backends import throttled
from accounts.usernames import username_for_new_account
from common.exceptions import InvalidInput


def user_register(*, username: str, password: str):
    """Create an account and its API token. The name is stored as every sign-in reads it
    (NFKC), and may not pass for another (`accounts.usernames`)."""
    User = get_user_model()
    user = User(username=username_for_new_account(username))
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise InvalidInput(
            "Choose a stronger password.", fields={"password": exc.messages}
        ) from exc
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError as exc:
        raise InvalidInput(
            "That username is taken.", fields={"username": ["Already taken."]}
        ) from exc
    token = Token.objects.create(user=user)
    return user, token


def token_login(*, request, username: str, password: str) -> Token:
    """The user's API token; `SigninThrottled` when the sign-in throttle refused the attempt."""
    user = authenticate(request, username=username, password=password)
    if user is None and (refused := throttled(request)) is not None:
        raise refused
    if user is None or not user.is_active:
        raise InvalidInput("Wrong username or password.")
    token, _ = Token.objects.get_or_create(user=user)
    return token


def token_logout(*, user) -> None:
    Token.objects.filter(user=user).delete()
