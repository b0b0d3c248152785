"""Test data every test package uses: users, projects, small gold-tagged corpora, API clients."""

import gzip
import io
import json
from types import SimpleNamespace

import factory
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken, token_digest
from accounts.services import token_issue
from annotation import services
from annotation.models import Membership


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")

    @factory.post_generation
    def token(obj, create, extracted, **kwargs):
        if create:
            obj.save()
            token_key(obj)


_keys: dict[int, str] = {}  # user id -> the key of the API token the tests use for them


def token_key(user) -> str:
    """The key of `user`'s API token for the tests (issued the first time it is asked for: only
    a token's digest is stored, so the key is kept here)."""
    key = _keys.get(user.pk)
    if key is None or not ApiToken.objects.filter(user=user, digest=token_digest(key)).exists():
        key = _keys[user.pk] = token_issue(user=user, name="tests").key
    return key


# `user.auth_token.key`, as the tests written for one token per user read it (DRF's model).
get_user_model().auth_token = property(lambda user: SimpleNamespace(key=token_key(user)))


TAGS = [
    {"name": "NOUN", "guideline": "A thing", "examples": ["dog"]},
    {"name": "VERB", "guideline": "An action", "examples": ["run"]},
    {"name": "DET", "guideline": "the, a", "examples": ["the"]},
    {"name": "ADJ", "guideline": "Describes", "examples": ["big"]},
]


def member(project, user=None, *, role=Membership.Role.ANNOTATOR, **user_fields):
    """`user` (a new one, made with `user_fields`, by default) as a member of `project`."""
    user = user or UserFactory(**user_fields)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def annotators(project, n: int) -> list:
    """`n` new annotators of `project`."""
    return [member(project) for _ in range(n)]


def make_project(owner=None, **settings):
    """A project through the service (as the API makes it): tags, manager membership."""
    owner = owner or UserFactory()
    fields = {"name": "Test project", "tags": TAGS, "window_size": 3, "redundancy": 2}
    fields.update(settings)
    return services.project_create(owner=owner, **fields)


# 12 sentences with gold tags (names of TAGS).
SENTENCES = [
    (["the", "big", "dog", "runs"], ["DET", "ADJ", "NOUN", "VERB"]),
    (["a", "cat", "sleeps"], ["DET", "NOUN", "VERB"]),
    (["dogs", "bark"], ["NOUN", "VERB"]),
    (["the", "old", "man", "walks", "the", "dog"], ["DET", "ADJ", "NOUN", "VERB", "DET", "NOUN"]),
    (["birds", "sing"], ["NOUN", "VERB"]),
    (["a", "red", "car", "stops"], ["DET", "ADJ", "NOUN", "VERB"]),
    (["the", "sun", "shines"], ["DET", "NOUN", "VERB"]),
    (["big", "trees", "grow"], ["ADJ", "NOUN", "VERB"]),
    (["the", "child", "reads", "a", "book"], ["DET", "NOUN", "VERB", "DET", "NOUN"]),
    (["rain", "falls"], ["NOUN", "VERB"]),
    (["a", "small", "bird", "flies"], ["DET", "ADJ", "NOUN", "VERB"]),
    (["the", "wind", "blows"], ["DET", "NOUN", "VERB"]),
]


def jsonl(sentences=SENTENCES) -> bytes:
    """A corpus file in the JSON lines format: one `{"tokens", "tags"}` object a sentence."""
    return "".join(json.dumps({"tokens": t, "tags": g}) + "\n" for t, g in sentences).encode()


def import_jsonl(project, user, data: bytes | None = None, **options):
    """`data` (by default `jsonl()`, the 12 SENTENCES) imported into `project` by `user` through
    the service, as a JSON lines file; `options` as `services.corpus_import` takes them."""
    file = io.BytesIO(jsonl() if data is None else data)
    return services.corpus_import(project=project, user=user, file=file, format="jsonl", **options)


def gzipped(chunk: bytes, times: int = 1, tail: bytes = b"") -> bytes:
    """gzip (level 9, no timestamp) of `chunk` `times` over and then `tail`, written a chunk at a
    time: a bomb's inflated text is never held."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as compressed:
        for _ in range(times):
            compressed.write(chunk)
        compressed.write(tail)
    return out.getvalue()


def corpus_upload(client, project, data: bytes, name="c.jsonl", format="jsonl", **fields):
    """A corpus file `data` sent to the project's corpus endpoint as a multipart upload."""
    body = {"file": SimpleUploadedFile(name, data), "format": format, **fields}
    return client.post(f"/api/projects/{project.pk}/corpus/", body, format="multipart")


def client_for(user=None) -> APIClient:
    """An API client that sends `user`'s token (anonymous without a user)."""
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_key(user)}")
    return client


def next_task(client, project, holding=None, **extra):
    """The annotator's "next task" request: with no body, or naming the leases it is `holding`
    (`{"holding": [...]}`, to lease one more ahead)."""
    if holding is None:
        return client.post(f"/api/projects/{project.pk}/tasks/next/", **extra)
    url = f"/api/projects/{project.pk}/tasks/next/"
    return client.post(url, {"holding": holding}, format="json", **extra)


def answer(client, task, key="key-1", **overrides):
    """The annotator's answer to `task` (as `next_task` returned it): every count 0."""
    body = {
        "assignment": task["assignment"],
        "counts": {t["name"]: 0 for t in task["tags"]},
        "seconds_on_device": 1.5,
        "idempotency_key": key,
        **overrides,
    }
    return client.post("/api/observations/", body, format="json")
