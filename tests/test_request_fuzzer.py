"""Four-persona request fuzzer: every URL the resolver knows, each persona, broken and odd inputs.

Every URL pattern of the site (the API, the pages, the admin) is found by walking the URL
resolver, so an endpoint added tomorrow is fuzzed without anyone listing it here. Each is tried by
the project's manager, an annotator of the project, an annotator of another project and an
anonymous visitor (with an API token on /api/, with a session cookie elsewhere), with every
method, odd query parameters (the OpenAPI schema's own ones among them) and broken or odd bodies:
malformed JSON, NaN and Infinity, lone surrogates and NUL, huge numbers, wrong types, deep nesting,
and each field of the schema's request body replaced in turn by an odd value.

It fails on
- any 5xx;
- an error under /api/ that is not the API's error body `{"error": {"code", "message"}}`;
- an answer a persona should not get: a 2xx for an anonymous visitor outside the public pages, a
  2xx for an annotator outside what annotators may do (`ANNOTATOR_MAY`: a new endpoint is
  managers-only until it is listed there), any answer to an annotator of another project that
  differs from the answer about a project that does not exist, a session write without its CSRF
  token that succeeds, and any secret (tokens, invite code, webhook secret, password hashes,
  the project's name to strangers) in an answer to someone who may not see it;
- a cell of a CSV answer that a spreadsheet would run as a formula (an annotator of the fixture
  is named "@crowd2").

Each persona's requests on one URL run in a savepoint that is rolled back, so a persona that
logs out, removes a member or rotates the invite code does not change what the next one sees.
The random choices are seeded; a few thousand requests, well under a minute on SQLite.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import random
import re
import socket
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from django.core.cache import cache
from django.core.signals import got_request_exception, request_finished
from django.db import DatabaseError, close_old_connections, transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.generators import SchemaGenerator

from annotation import scheduler
from annotation.models import Membership
from delivery.models import Webhook, WebhookDelivery
from learning import services as learning_services
from learning import tasks as learning_tasks
from tests.support.crowd import answer_tasks, import_corpus, toy_sentences
from tests.support.factories import UserFactory, make_project

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SEED = 14
SECRET_NAME = "Zanzibar-7f3c"  # the project's name: strangers must never see it
WEBHOOK_SECRET = "whsec-9d1b6a4e2f7c8a0b"
CSRF_TOKEN = "fuzz" * 8  # 32 characters, as Django's CSRF secrets
NOPE = 2**63 - 1  # a valid id that names nothing
METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}

# URL names anyone may get a 2xx (or a redirect) from, signed in or not.
PUBLIC = {
    "healthz",
    "ping",
    "register",
    "login",
    "schema",
    "api-docs",
    "frontend:login",
    "frontend:logout",
    "frontend:signup",
    "frontend:join-form",
    "frontend:join",
    "frontend:annotate-worker",  # the annotator page's service worker: code, no data
    "admin:login",
    "admin:logout",
    "password-reset",  # "forgot your password": the same answer whoever asks
    "password-reset-confirm",
    "account:password-reset",
    "account:password-reset-sent",
    "account:password-reset-confirm",
    "account:password-reset-complete",
}
# Views that only describe the API (each answer costs the whole schema): plain requests only.
DESCRIBED_ONLY = {"schema", "api-docs"}
# What any signed-in user may do outside a project (or in projects of their own).
ANYONE_SIGNED_IN = {
    ("GET", "project-list"),
    ("POST", "project-list"),
    ("POST", "project-create-with-corpus"),  # the multipart form of POST project-list
    ("POST", "corpus-preview"),  # the new-project form's preview: no project yet, nothing stored
    ("GET", "me"),
    ("PATCH", "me"),
    ("POST", "join"),
    ("POST", "logout"),
    ("GET", "token-list"),
    ("DELETE", "token-detail"),
    ("POST", "password-change"),
    ("GET", "account:home"),
    ("POST", "account:home"),
    ("POST", "account:token-revoke"),
    ("POST", "account:sign-out-everywhere"),
    ("GET", "account:password-change"),
    ("POST", "account:password-change"),
    ("GET", "account:password-changed"),
    ("GET", "frontend:home"),
    ("GET", "frontend:project-new"),
}
# What an annotator may do in the project they annotate; everything else under a project is for
# its managers. A new endpoint is managers-only until it is listed here.
ANNOTATOR_MAY = ANYONE_SIGNED_IN | {
    ("GET", "project-detail"),
    ("GET", "my-stats"),
    ("POST", "task-next"),
    ("POST", "observation-submit"),
    ("GET", "frontend:annotate"),
}

ODD_VALUES = [
    None,
    True,
    0,
    -1,
    2**31,
    2**63,
    10**30,
    -(10**30),
    0.5,
    1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    "",
    " ",
    "x" * 20_000,
    "\x00",
    "a\x00b",
    "\ud800",
    "a\udfffb",
    "\u202e\u0000",
    "\U0001f4a9",
    '=HYPERLINK("//evil.example")',
    "../../../etc/passwd",
    "%s%n%x",
    "1",
    "null",
    [],
    [None, 1, "x"],
    {},
    {"a": {"b": []}},
    list(range(5000)),
]
# Whole bodies (bytes): each sent as JSON unless a content type is given.
RAW_BODIES = [
    b"",
    b"{",
    b"null",
    b"[]",
    b'"x"',
    b"1",
    b"true",
    b"NaN",
    b'{"a": NaN}',
    b'{"a": [Infinity]}',
    b'{"a": -Infinity}',
    b'{"a": 1e999}',
    b'{"a": -1e999}',
    b'{"a": 123456789012345678901234567890}',
    b'{"a": "\\ud800"}',
    b'{"\\ud800": 1}',
    b'{"a": ["\\u0000"]}',
    b'{"\\u0000": 1}',
    b"\xff\xfe\x00",
    b'\xef\xbb\xbf{"a": 1}',
    b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 (invalid UTF-8)
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 20_000 + b"1" + b"}" * 20_000,
    b'{"a": "' + b"x" * 3_000_000 + b'"}',
    b'{"a": 1, "a": 2}',
]
OTHER_CONTENT = [
    (b"a=1&b=%00&c=%ED%A0%80", "application/x-www-form-urlencoded"),
    (b"name=%00&status=%00", "application/x-www-form-urlencoded"),
    (b"--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\x00\r\n--x--\r\n",
     "multipart/form-data; boundary=x"),
    (b"--x\r\nbroken", "multipart/form-data; boundary=x"),
    (b"{}", "multipart/form-data"),
    (b"<xml/>", "application/xml"),
    (b'{"a": 1}', "text/plain"),
    (b'{"a": 1}', "application/json; charset=latin-1"),
    (b'{"a": 1}', "application/json; charset=nonsense"),
]  # fmt: skip
# Form bodies for the pages (sent with a valid CSRF token, so they reach the form).
FORM_BODIES = [
    b"username=%00&password=x",
    b"username=manager&password=%00",
    b"username=%ED%A0%80&password=%ED%A0%80",
    b"username=" + b"x" * 5000 + b"&password=y",
    b"username=a&password=b&next=//evil.example",
    b"username=a&password=b&next=%00",
    b"code=%00",
    b"code=" + quote("\u202e").encode(),
    b"&&&==&",
    b"%",
]
QUERIES = [
    "limit=abc",
    "limit=99999999999999999999",
    "limit=-1",
    "limit=0",
    "limit=1e3",
    "limit=%00",
    "limit=1&limit=2",
    "offset=-5",
    "offset=99999999999999999999",
    "offset=x",
    "limit=100000&offset=0",
    "since=99999999999999999999",
    "since=%00",
    "code=%00",
    "next=%00",
    "next=//evil.example",
    "format=xml",
    "q=%ED%A0%80",
    "%00=1",
]
AUTH_HEADERS = [
    "Token",
    "Token a b",
    "Token \x00",
    "Token " + "x" * 5000,
    "Token Ã¼nÃ¯cÃ¶de",
    "Bearer abc",
    "Basic Og==",
]


@dataclass
class World:
    project: object
    other: object
    manager: object
    annotator: object
    outsider: object
    hook: object
    assignment: int
    tags: list[str]
    secrets: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def quiet():
    """Thousands of refusals are logged as warnings: not here (exceptions are recorded)."""
    logging.disable(logging.CRITICAL)
    yield
    logging.disable(logging.NOTSET)


@pytest.fixture
def world(settings, tmp_path, monkeypatch, quiet):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "f"}
    }
    settings.TALLY_SSE_STREAM_SECONDS = 1
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = False
    # Nothing leaves the process: no job queued, no name looked up in the DNS.
    monkeypatch.setattr(learning_tasks, "retrain_enqueue", lambda **kwargs: True)
    monkeypatch.setattr(learning_tasks, "webhook_enqueue", lambda **kwargs: True)
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        try:
            return real_getaddrinfo(host, port, *args, flags=socket.AI_NUMERICHOST)
        except socket.gaierror:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port or 80))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    manager = UserFactory(username="manager")
    project = make_project(
        owner=manager, name=SECRET_NAME, window_size=3, redundancy=3, tags_per_task=None
    )
    import_corpus(project, manager, toy_sentences(40))
    crowd = []
    for i in range(3):
        # "@crowd2": a name a spreadsheet would read as a formula, in the CSV export.
        user = UserFactory(username=f"crowd{i}" if i < 2 else "@crowd2")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        crowd.append(user)
    answer_tasks(project, crowd, 40)
    learning_services.retrain_run(project_id=project.pk, trigger="manual")
    annotator = crowd[0]
    # A count task (the bodies below answer one); verification tasks go through the same
    # endpoints, with the same rules of who may call them.
    lease = scheduler.task_lease_next(project=project, annotator=annotator, kind_draw=1.0)
    names = [t.name for t in project.tags.order_by("position")]
    hook = Webhook.objects.create(
        project=project, url="https://hooks.example/tally", secret=WEBHOOK_SECRET
    )
    WebhookDelivery.objects.create(
        webhook=hook, event="report.created", version_number=1, payload={}
    )
    other = make_project(owner=UserFactory(username="other_manager"), name="Other")
    outsider = UserFactory(username="outsider")
    Membership.objects.create(project=other, user=outsider, role=Membership.Role.ANNOTATOR)
    project.refresh_from_db()
    world = World(
        project=project,
        other=other,
        manager=manager,
        annotator=annotator,
        outsider=outsider,
        hook=hook,
        assignment=lease.assignment_id,
        tags=[names[k] for k in lease.tags],
    )
    world.secrets = {
        "manager_token": manager.auth_token.key,
        "annotator_token": annotator.auth_token.key,
        "outsider_token": outsider.auth_token.key,
        "invite_code": project.invite_code,
        "webhook_secret": WEBHOOK_SECRET,
        "project_name": SECRET_NAME,
    }
    return world


# URLs ------------------------------------------------------------------------------------------


@dataclass
class Route:
    name: str
    template: str  # with {param} placeholders
    params: tuple[str, ...]
    callback: object


_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>[^)]*\)")


def _route_text(pattern) -> str:
    """A pattern as a template: `<id:project_id>` and `(?P<x>...)` become `{project_id}`, `{x}`."""
    text = str(pattern)
    if text.startswith("^"):  # a regex pattern
        text = _GROUP.sub(lambda m: "{" + m["name"] + "}", text.lstrip("^").rstrip("$"))
        return text.replace("\\", "")
    return _PARAM.sub(lambda m: "{" + m["name"] + "}", text)


def routes() -> list[Route]:
    found = []

    def walk(patterns, prefix, namespace):
        for pattern in patterns:
            text = prefix + _route_text(pattern.pattern)
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace
                if inner and namespace:
                    inner = f"{namespace}:{inner}"
                walk(pattern.url_patterns, text, inner or namespace)
            elif isinstance(pattern, URLPattern):
                name = pattern.name or text
                name = f"{namespace}:{name}" if namespace else name
                found.append(
                    Route(name, "/" + text, tuple(re.findall(r"{(\w+)}", text)), pattern.callback)
                )

    walk(get_resolver().url_patterns, "", None)
    return found


def _fill(route: Route, world: World, *, project_id: int | None = None) -> list[str]:
    """Concrete paths for a route: the fixture's objects, and ids that name nothing."""
    if any(p not in FILL for p in route.params):
        missing = [p for p in route.params if p not in FILL]
        pytest.fail(f"{route.name}: add a value for URL parameter(s) {missing} to FILL")
    choices = []
    for param in route.params:
        values = FILL[param](world)
        if param == "project_id" and project_id is not None:
            values = [project_id]
        choices.append(values)
    paths = []
    # The first value of each parameter together, then each odd value alone.
    base = [values[0] for values in choices]
    paths.append(route.template.format(**dict(zip(route.params, base, strict=True))))
    for i, values in enumerate(choices):
        for value in values[1:]:
            filled = list(base)
            filled[i] = value
            paths.append(route.template.format(**dict(zip(route.params, filled, strict=True))))
    return paths


FILL = {
    "project_id": lambda w: [w.project.pk, NOPE],
    "user_id": lambda w: [w.annotator.pk, w.manager.pk, w.outsider.pk, NOPE],
    "number": lambda w: [1, NOPE],
    "webhook_id": lambda w: [w.hook.pk, NOPE],
    "job_id": lambda w: [1, NOPE],
    # The manager's token: only the manager may revoke it (404 for everyone else).
    "token_id": lambda w: [w.manager.api_tokens.order_by("pk").first().pk, NOPE],
    "uidb64": lambda w: ["MQ", "x", quote("\x00")],
    "token": lambda w: ["set-password", "abc-123"],
    "code": lambda w: [
        w.project.invite_code,
        "nope",
        quote("\x00"),
        quote("\ud800", errors="surrogatepass"),
        "%E2%80%AE",
    ],  # noqa: E501
    "object_id": lambda w: ["1", "x", quote("\x00")],
    "id": lambda w: ["1", "x"],
    "app_label": lambda w: ["annotation", "learning", "auth"],
    "content_type_id": lambda w: ["1", "999999"],
    "url": lambda w: ["x", quote("\x00")],
}


# Bodies ----------------------------------------------------------------------------------------


def _resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    if "allOf" in schema:
        merged: dict = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, components))
        return merged
    return schema


def _example(schema: dict, components: dict, depth: int = 0):
    schema = _resolve(schema, components)
    if "enum" in schema:
        return next((v for v in schema["enum"] if v not in (None, "")), None)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if depth > 3:
            return {}
        return {
            name: _example(sub, components, depth + 1)
            for name, sub in schema.get("properties", {}).items()
            if not sub.get("readOnly")
        }
    if kind == "array":
        return [_example(schema.get("items", {}), components, depth + 1)]
    return {"integer": 1, "number": 0.5, "boolean": True, "string": "x"}.get(kind, "x")


class Schema:
    """The OpenAPI schema's request bodies and query parameters, by path and method."""

    def __init__(self) -> None:
        doc = SchemaGenerator().get_schema(request=None, public=True)
        self.components = doc["components"]["schemas"]
        self.paths = {}
        for path, operations in doc["paths"].items():
            regex = "^" + re.sub(r"\\{\w+\\}", r"[^/]+", re.escape(path)) + "$"
            self.paths[re.compile(regex)] = operations

    def operation(self, path: str, method: str) -> dict:
        for regex, operations in self.paths.items():
            if regex.match(path):
                return operations.get(method.lower(), {})
        return {}

    def body(self, path: str, method: str) -> dict | None:
        content = self.operation(path, method).get("requestBody", {}).get("content", {})
        for media in ("application/json", "multipart/form-data"):
            if media in content:
                return _example(content[media]["schema"], self.components)
        return None

    def query_names(self, path: str, method: str) -> list[str]:
        return [
            p["name"]
            for p in self.operation(path, method).get("parameters", [])
            if p.get("in") == "query"
        ]


def _good_bodies(world: World) -> dict[str, dict]:
    """Bodies that are right in every field, by URL name: mutations then test one field at a
    time past the first checks."""
    return {
        "observation-submit": {
            "assignment": world.assignment,
            "counts": {name: 0 for name in world.tags},
            "idempotency_key": "fuzz-key",
            "seconds_on_device": 2.5,
        },
        "task-next": {"holding": [world.assignment]},
        # A private project (issue 13): its level, mechanism and tags per task fuzzed too.
        "project-list": {
            "name": "Fuzzed",
            "tag_preset": "ud_upos",
            "gold_fraction": 0.1,
            "tags_per_task": 1,
            "private": True,
            "alpha": 2.0,
            "mechanism": "geometric",
        },
        # The task mix (issue 15) fuzzed with the other settings.
        "project-detail": {
            "name": SECRET_NAME,
            "status": "active",
            "gold_fraction": 0.1,
            "verification_share": 0.5,
        },
        "predict": {"text": "the dog runs"},
        "retrain-schedule": {"interval_minutes": 5, "enabled": True},
        "webhook-list": {"url": "https://hooks.example/b", "secret": "s" * 20},
        "webhook-detail": {"active": False},
        "login": {"username": "manager", "password": "wrong password 42"},
        "register": {"username": "fuzzer", "password": "correct horse 42"},
        "join": {"code": world.project.invite_code},
    }


@dataclass
class Call:
    method: str
    path: str
    body: bytes | None = None
    content_type: str | None = None
    headers: dict = field(default_factory=dict)
    odd: str = ""  # what is odd about it, for the failure message


def _json(value) -> bytes:
    return json.dumps(value).encode()  # NaN, Infinity and lone surrogates pass as JSON text


# Sent to every field of every body; other odd values are sampled.
ALWAYS = [float("nan"), float("inf"), "\ud800", "a\x00b", 2**63, 10**30, None, [], {}]


def _mutations(body, rng: random.Random, sampled: int):
    """`body` with one field (at any depth) replaced by an odd value: each of `ALWAYS` in every
    field, and `sampled` more (field, value) pairs."""
    slots = []

    def collect(node, trail):
        if isinstance(node, dict):
            for key, value in node.items():
                slots.append(trail + (key,))
                collect(value, trail + (key,))
        elif isinstance(node, list) and node:
            slots.append(trail + (0,))
            collect(node[0], trail + (0,))

    collect(body, ())
    pairs = [(slot, value) for slot in slots for value in ALWAYS]
    others = [(slot, value) for slot in slots for value in ODD_VALUES if value not in ALWAYS]
    pairs += rng.sample(others, min(sampled, len(others)))
    for slot, value in pairs:
        mutated = json.loads(json.dumps(body))
        node = mutated
        for step in slot[:-1]:
            node = node[step]
        node[slot[-1]] = value
        yield mutated, f"{'.'.join(map(str, slot))}={value!r:.40}"


def probe(method: str, path: str) -> Call:
    """The plain request: does the URL take this method at all?"""
    return Call(method, path, b"{}" if method in UNSAFE else None, "application/json")


def odd_calls(
    route: Route, method: str, path: str, world: World, schema: Schema, rng: random.Random
) -> list[Call]:
    """Every odd input for one method of one path."""
    if method in ("HEAD", "OPTIONS", "DELETE"):
        return []
    if not path.startswith("/api/"):
        if method != "POST":
            return [] if method != "GET" else [Call(method, f"{path}?{q}", odd=q) for q in QUERIES]
        form = "application/x-www-form-urlencoded"
        return [Call(method, path, body, form, odd=f"form {body[:40]!r}") for body in FORM_BODIES]
    if method == "GET":
        names = schema.query_names(path, method)
        queries = QUERIES + [f"{n}={v}" for n in names for v in ("%00", "x", "-1")]
        return [Call(method, f"{path}?{q}", odd=q) for q in queries]
    base = _good_bodies(world).get(route.name) or schema.body(path, method) or {}
    out = [Call(method, path, _json(base), "application/json", odd="good body")]
    out += [
        Call(method, path, raw, "application/json", odd=f"raw {raw[:40]!r}") for raw in RAW_BODIES
    ]
    out += [
        Call(method, path, raw, ctype, odd=f"{ctype} {raw[:30]!r}") for raw, ctype in OTHER_CONTENT
    ]
    out += [
        Call(method, path, _json(mutated), "application/json", odd=what)
        for mutated, what in _mutations(base, rng, 15)
    ]
    if "multipart/form-data" in str(schema.operation(path, method)):
        out += _uploads(method, path)
    return out


def _multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(f'--B\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode())
        out.write(value.encode("utf-8", "surrogatepass") + b"\r\n")
    for name, (filename, content) in files.items():
        out.write(
            f'--B\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode("utf-8", "surrogatepass")
        )
        out.write(content + b"\r\n")
    out.write(b"--B--\r\n")
    return out.getvalue()


def _uploads(method: str, path: str) -> list[Call]:
    ctype = "multipart/form-data; boundary=B"
    jsonl = b'{"tokens": ["the", "dog"], "tags": ["DET", "NOUN"]}\n'
    cases = [
        ({"format": "jsonl"}, {"file": ("c.jsonl", jsonl)}),
        ({"format": "jsonl", "seed": "99999999999999999999"}, {"file": ("c.jsonl", jsonl)}),
        ({"format": "jsonl", "evaluation_fraction": "NaN"}, {"file": ("c.jsonl", jsonl)}),
        ({"format": "jsonl", "gold_check_fraction": "inf"}, {"file": ("c.jsonl", jsonl)}),
        ({"format": "\x00"}, {"file": ("c.jsonl", jsonl)}),
        ({"format": "conllu", "tag_column": "\ud800"}, {"file": ("\x00.conllu", b"1\tx\n")}),
        ({"format": "plain"}, {"file": ("p.txt", b"\x00\x01\x02\n\xff\xfe")}),
        ({"format": "jsonl"}, {"file": ("c.jsonl.gz", b"\x1f\x8b\x08\x00garbage")}),
        ({"format": "jsonl"}, {"file": ("c.jsonl", b'{"tokens": ["\\ud800"], "tags": null}\n')}),
        ({"format": "jsonl"}, {"file": ("c.jsonl", b'{"tokens": ["a\\u0000"]}\n')}),
        ({"format": "jsonl"}, {"file": ("c.jsonl", b'{"tokens": [NaN]}\n')}),
        ({"format": "jsonl"}, {}),
    ]
    return [
        Call(method, path, _multipart(fields, files), ctype, odd=f"upload {fields} {list(files)}")
        for fields, files in cases
    ]


# Judging answers --------------------------------------------------------------------------------


def _body_text(response) -> str:
    if getattr(response, "streaming", False):
        if "event-stream" in response.get("Content-Type", ""):
            return ""  # a live stream: not read to its end here
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _error_shape(text: str) -> bool:
    try:
        error = json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(error.get("code"), str) and isinstance(error.get("message"), str)


def _may_succeed(persona: str, method: str, route: Route) -> bool:
    key = ("GET" if method in ("HEAD", "OPTIONS") else method, route.name)
    if route.name in PUBLIC or persona == "manager":
        return True
    if persona == "anonymous":
        return False
    if persona == "annotator":
        return key in ANNOTATOR_MAY or (
            method == "OPTIONS" and any(k[1] == route.name for k in ANNOTATOR_MAY)
        )
    # The outsider: their own things only (their project is not the fixture's).
    return key in ANYONE_SIGNED_IN or (
        method == "OPTIONS" and any(k[1] == route.name for k in ANYONE_SIGNED_IN)
    )


def _hidden_from(persona: str, world: World, call: Call) -> dict[str, str]:
    """The secrets `persona` must not see in an answer to `call`."""
    s = world.secrets
    hidden = {"password hash": "md5$"}
    if persona != "manager":
        hidden |= {"manager_token": s["manager_token"], "webhook_secret": s["webhook_secret"]}
        hidden["invite_code"] = s["invite_code"]
    if persona != "annotator":
        hidden["annotator_token"] = s["annotator_token"]
    if persona != "outsider":
        hidden["outsider_token"] = s["outsider_token"]
    if persona in ("outsider", "anonymous"):
        hidden["project_name"] = s["project_name"]
    sent = call.path + (call.body or b"").decode("utf-8", "replace")
    if s["invite_code"] in sent:  # whoever has the invite code may see the project
        hidden.pop("project_name", None)
    return {k: v for k, v in hidden.items() if v not in sent}


def _close(response) -> None:
    """Close a response as a server does, so an event stream gives back its per-user slot
    (TALLY_SSE_STREAMS_PER_USER). As Django's test client does when it closes one, without
    `close_old_connections`: inside the test's transaction it would close the database
    connection (PostgreSQL's; SQLite ignores closing an in-memory database)."""
    if not response.streaming:
        return  # the test client has closed it already
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


@dataclass
class Fuzz:
    world: World
    failures: list[str] = field(default_factory=list)
    requests: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    last_exception: list = field(default_factory=list)
    last_status: int = 0

    def check(self, client: Client, persona: str, route: Route, call: Call) -> None:
        response, text = self.send(client, call)
        self.last_status = response.status_code
        self.judge(persona, route, call, response, text)
        if persona == "outsider" and "project_id" in route.params:
            _compare_with_nowhere(self, client, call, response, text)

    def send(self, client: Client, call: Call):
        cache.clear()  # no sign-in throttle between the fuzzer's requests
        self.last_exception.clear()
        kwargs = dict(call.headers)
        if call.body is not None:
            kwargs["data"] = call.body
            kwargs["content_type"] = call.content_type or "application/octet-stream"
        # A savepoint per request: on PostgreSQL, a request that breaks its transaction (the
        # bug being looked for) must not break every request after it.
        savepoint = transaction.savepoint()
        response = client.generic(call.method, call.path, **kwargs)
        try:
            transaction.savepoint_commit(savepoint)
        except DatabaseError:
            transaction.savepoint_rollback(savepoint)
        self.requests += 1
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        try:
            return response, _body_text(response)
        finally:
            _close(response)

    def fail(self, persona: str, call: Call, problem: str) -> None:
        where = f"{persona} {call.method} {call.path[:120]} [{call.odd[:80]}]"
        trace = "".join(self.last_exception)[-1500:]
        self.failures.append(f"{where}: {problem}" + (f"\n{trace}" if trace else ""))

    def judge(self, persona: str, route: Route, call: Call, response, text: str) -> None:
        status = response.status_code
        if status >= 500:
            self.fail(persona, call, f"{status} {text[:200]}")
            return
        api_error = call.path.startswith("/api/") and status >= 400 and call.method != "HEAD"
        if api_error and not _error_shape(text):
            self.fail(persona, call, f"{status} not in the error shape: {text[:200]!r}")
        success = 200 <= status < 300
        if success and not _may_succeed(persona, call.method, route):
            self.fail(persona, call, f"{status}: this persona may not get this")
        if success and "text/csv" in response.get("Content-Type", ""):
            formulas = [c for c in _csv_cells(text) if c.startswith(FORMULA_STARTS)]
            if formulas:
                self.fail(persona, call, f"CSV cells a spreadsheet runs: {formulas[:3]}")
        for what, secret in _hidden_from(persona, self.world, call).items():
            if secret in text or any(secret in str(v) for v in response.headers.values()):
                self.fail(persona, call, f"{status}: the answer shows the {what}")


def _clients(world: World) -> dict[str, tuple[Client, Client]]:
    """(API client with a token, page client with a session) per persona."""
    out = {}
    for persona, user in (
        ("manager", world.manager),
        ("annotator", world.annotator),
        ("outsider", world.outsider),
        ("anonymous", None),
    ):
        api = Client(raise_request_exception=False)
        pages = Client(raise_request_exception=False, enforce_csrf_checks=True)
        # A CSRF cookie and the header that matches it, as a page's script sends.
        pages.cookies["csrftoken"] = CSRF_TOKEN
        pages.defaults["HTTP_X_CSRFTOKEN"] = CSRF_TOKEN
        if user is not None:
            api.defaults["HTTP_AUTHORIZATION"] = f"Token {user.auth_token.key}"
            pages.force_login(user)
        out[persona] = (api, pages)
    return out


def _keep_signed_in(pages: Client, persona: str, world: World) -> None:
    """Sign the page client in again if a request signed it out (the rollback undid the rest)."""
    user = {"manager": world.manager, "annotator": world.annotator, "outsider": world.outsider}
    if persona in user and pages.session.get("_auth_user_id") != str(user[persona].pk):
        pages.force_login(user[persona])
    pages.cookies["csrftoken"] = CSRF_TOKEN


def _comparable(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text[:0]  # pages: the status says enough


def test_fuzz_every_url_as_every_persona(world):
    rng = random.Random(SEED)
    schema = Schema()
    fuzz = Fuzz(world)
    exceptions = fuzz.last_exception

    def record(sender, request, **kwargs):
        exceptions.append(traceback.format_exc())

    got_request_exception.connect(record)
    try:
        clients = _clients(world)
        all_routes = routes()
        assert len(all_routes) > 40
        for route in all_routes:
            is_api = route.template.startswith("/api/")
            is_admin = route.template.startswith("/admin/")
            for persona in ("anonymous", "outsider", "annotator", "manager"):
                if is_admin and persona not in ("anonymous", "manager"):
                    continue
                api, pages = clients[persona]
                client = api if is_api else pages
                paths = _fill(route, world)[:1] if is_admin else _fill(route, world)
                with transaction.atomic():
                    for i, path in enumerate(paths):
                        for method in ("GET", "POST") if is_admin else METHODS:
                            call = probe(method, path)
                            fuzz.check(client, persona, route, call)
                            if fuzz.last_status == 405 or i > 0 or is_admin:
                                continue
                            if route.name in DESCRIBED_ONLY:
                                continue
                            if persona == "manager" or _may_succeed(persona, method, route):
                                calls = odd_calls(route, method, path, world, schema, rng)
                                if persona != "manager":  # the same handlers: a sample
                                    calls = rng.sample(calls, (len(calls) + 1) // 2)
                                for call in calls:
                                    fuzz.check(client, persona, route, call)
                    transaction.set_rollback(True)
                _keep_signed_in(pages, persona, world)
            # A session without its CSRF token writes nothing through the API.
            if is_api and route.name not in PUBLIC:
                _session_writes(fuzz, clients, route, world)
        # Credentials that are not what they seem, on every API URL.
        for route in all_routes:
            if route.template.startswith("/api/"):
                _odd_credentials(fuzz, route, world)
    finally:
        got_request_exception.disconnect(record)
    print(f"fuzzer: {fuzz.requests} requests, statuses {sorted(fuzz.statuses.items())}")
    if os.environ.get("TALLY_FUZZ_REPORT"):
        Path(os.environ["TALLY_FUZZ_REPORT"]).write_text("\n\n".join(fuzz.failures))
    assert fuzz.requests >= 2000
    assert not fuzz.failures, (
        f"{len(fuzz.failures)} of {fuzz.requests} requests answered wrongly; the first:\n"
        + "\n".join(fuzz.failures[:15])
    )


def _compare_with_nowhere(fuzz: Fuzz, client, call: Call, response, text) -> None:
    """An annotator of another project learns nothing about this one: the same request about a
    project that does not exist gets the same answer."""
    nowhere = call.path.replace(f"/{fuzz.world.project.pk}/", f"/{NOPE}/", 1)
    twin = Call(call.method, nowhere, call.body, call.content_type, call.headers, call.odd)
    other, other_text = fuzz.send(client, twin)
    if other.status_code != response.status_code or _comparable(text) != _comparable(other_text):
        fuzz.fail(
            "outsider",
            call,
            f"{response.status_code} {text[:100]!r}, but about no project: "
            f"{other.status_code} {other_text[:100]!r}",
        )


def _session_writes(fuzz: Fuzz, clients, route: Route, world: World) -> None:
    for persona in ("manager", "annotator"):
        _, pages = clients[persona]
        for path in _fill(route, world)[:1]:
            for method in sorted(UNSAFE):
                with transaction.atomic():
                    call = Call(method, path, b"{}", "application/json", odd="session, no CSRF")
                    call.headers = {"HTTP_X_CSRFTOKEN": ""}
                    fuzz.check(pages, persona, route, call)
                    if 200 <= fuzz.last_status < 300:
                        fuzz.fail(persona, call, "a cookie write without CSRF token succeeded")
                    transaction.set_rollback(True)


def _odd_credentials(fuzz: Fuzz, route: Route, world: World) -> None:
    client = Client(raise_request_exception=False)
    path = _fill(route, world)[0]
    for header in AUTH_HEADERS:
        for method in ("GET", "POST"):
            call = Call(
                method,
                path,
                b"{}" if method == "POST" else None,
                "application/json",
                {"HTTP_AUTHORIZATION": header},
                odd=f"Authorization: {header[:30]!r}",
            )
            with transaction.atomic():
                fuzz.check(client, "anonymous", route, call)
                transaction.set_rollback(True)


def test_routes_cover_the_api_and_the_pages():
    names = {route.name for route in routes()}
    assert {"observation-submit", "task-next", "project-list", "frontend:annotate"} <= names
    assert any(name.startswith("admin:") for name in names)
