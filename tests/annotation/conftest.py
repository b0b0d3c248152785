"""Fixtures of the annotation tests: personas, a project with a small gold-tagged corpus."""

import io
import json

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from annotation import services
from annotation.models import Membership
from tests.annotation.factories import TAGS, UserFactory, make_project

# 12 sentences with gold tags (indices into TAGS names).
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


def jsonl_bytes(sentences=SENTENCES) -> bytes:
    lines = [json.dumps({"tokens": t, "tags": g}) for t, g in sentences]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _private_cache(settings):
    """Throttle counters in a cache of this process: the file cache in var/ is shared with
    whatever else runs on the machine."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "t"}
    }
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def manager(db):
    return UserFactory(username="manager")


@pytest.fixture
def project(manager):
    return make_project(owner=manager)


@pytest.fixture
def corpus(project, manager):
    return services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(jsonl_bytes()),
        filename="c.jsonl",
        format="jsonl",
        max_bytes=10**6,
        seed=1,
    )


@pytest.fixture
def annotator(project):
    user = UserFactory(username="annotator")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user


@pytest.fixture
def other_project():
    return make_project(owner=UserFactory(username="other_manager"), name="Other")


@pytest.fixture
def outsider(other_project):
    """An annotator of another project."""
    user = UserFactory(username="outsider")
    Membership.objects.create(project=other_project, user=user, role=Membership.Role.ANNOTATOR)
    return user


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {user.auth_token.key}")
    return client


@pytest.fixture
def personas(manager, annotator, outsider):
    return {
        "manager": client_for(manager),
        "annotator": client_for(annotator),
        "outsider": client_for(outsider),
        "anonymous": client_for(None),
    }


__all__ = ["TAGS", "SENTENCES", "client_for", "jsonl_bytes"]
