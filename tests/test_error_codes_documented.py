"""Every error code the API can answer is listed in its contracts (annotation/API.md and
learning/API.md): issue 17 found `parse_error` answered but missing from the codes listed."""

import re
from pathlib import Path

import django.urls
from rest_framework import exceptions as drf

from common.exceptions import DomainError

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("accounts", "annotation", "common", "config", "learning")
# Codes written where an answer is made: error_body("x", ...), request_error(request, 400, "x",
# ...), error_response(400, "x", ...), and the code attributes of exception classes.
WRITTEN = re.compile(
    r"""(?:error_body\(\s*|request_error\(\s*\w+,\s*\d+,\s*|error_response\(\s*\d+,\s*"""
    r"""|\bcode\s*=\s*|default_code\s*=\s*)"([a-z_]+)\"""",
    re.S,
)
# DRF's own exceptions that Tally's views can raise (content negotiation, parsing, auth, throttle).
DRF = (
    drf.ParseError, drf.AuthenticationFailed, drf.NotAuthenticated, drf.PermissionDenied,
    drf.NotFound, drf.MethodNotAllowed, drf.NotAcceptable, drf.UnsupportedMediaType,
    drf.Throttled,
)  # fmt: skip


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _codes() -> set[str]:
    django.urls.get_resolver().url_patterns  # noqa: B018 (imports every view and its errors)
    codes = {sub.code for sub in _subclasses(DomainError)} | {exc.default_code for exc in DRF}
    for package in SOURCES:
        for path in (ROOT / package).rglob("*.py"):
            codes |= set(WRITTEN.findall(path.read_text(encoding="utf-8")))
    return codes


def test_every_error_code_is_in_the_api_contracts():
    docs = "".join((ROOT / f"{app}/API.md").read_text(encoding="utf-8") for app in SOURCES[1::3])
    codes = _codes()
    assert {"parse_error", "duplicate_corpus", "idempotency_key_reused", "no_model"} <= codes
    missing = sorted(code for code in codes if f"`{code}`" not in docs and f" {code}`" not in docs)
    assert not missing, f"error codes missing from annotation/API.md and learning/API.md: {missing}"
