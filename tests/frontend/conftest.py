"""Fixtures of the frontend tests: personas, a small gold-tagged project, a real Chromium.

The browser is Debian's Chromium driven by Playwright (downloading a browser does not work here).
"""

import io
import json
import os
import shutil

import pytest
from django.core.cache import cache
from django.test import Client

from annotation import services
from annotation.models import Membership
from tests.annotation.factories import UserFactory, make_project

PASSWORD = "correct horse battery"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE = {"viewport": {"width": 360, "height": 640}, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}

SENTENCES = [
    (["the", "big", "dog", "runs", "home"], ["DET", "ADJ", "NOUN", "VERB", "NOUN"]),
    (["a", "cat", "sees", "the", "big", "sun"], ["DET", "NOUN", "VERB", "DET", "ADJ", "NOUN"]),
    (["the", "old", "man", "walks", "the", "dog"], ["DET", "ADJ", "NOUN", "VERB", "DET", "NOUN"]),
    (["a", "red", "car", "stops", "here"], ["DET", "ADJ", "NOUN", "VERB", "NOUN"]),
    (["big", "trees", "grow", "tall", "trees"], ["ADJ", "NOUN", "VERB", "ADJ", "NOUN"]),
    (["the", "child", "reads", "a", "book"], ["DET", "NOUN", "VERB", "DET", "NOUN"]),
    (["a", "small", "bird", "flies", "away"], ["DET", "ADJ", "NOUN", "VERB", "NOUN"]),
    (["the", "wind", "blows", "cold", "air"], ["DET", "NOUN", "VERB", "ADJ", "NOUN"]),
]


def jsonl(sentences=SENTENCES) -> bytes:
    return "".join(json.dumps({"tokens": t, "tags": g}) + "\n" for t, g in sentences).encode()


@pytest.fixture(autouse=True)
def _fast_hashing_and_own_cache(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # A cache of this process only: the default file cache is shared by every process using the
    # same data directory, and sign-in rate limits are counted in it.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def manager(transactional_db):
    return UserFactory(username="manager")


@pytest.fixture
def project(manager):
    project = make_project(owner=manager, name="Pets & <b>things</b>", tags_per_task=2)
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(jsonl()),
        filename="pets.jsonl",
        format="jsonl",
        max_bytes=10**6,
        seed=3,
    )
    return project


@pytest.fixture
def annotator(project):
    user = UserFactory(username="annotator")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user


@pytest.fixture
def outsider(transactional_db):
    """An annotator of another project."""
    other = make_project(owner=UserFactory(username="other_manager"), name="Other")
    user = UserFactory(username="outsider")
    Membership.objects.create(project=other, user=user, role=Membership.Role.ANNOTATOR)
    return user


def client_for(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def personas(manager, annotator, outsider):
    return {
        "manager": client_for(manager),
        "annotator": client_for(annotator),
        "outsider": client_for(outsider),
        "anonymous": client_for(None),
    }


# --- Browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser():
    if not shutil.which("chromium") and not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium")  # the `browser` marker decides skip or fail
    # Playwright's sync API runs an event loop in this thread; the tests' ORM calls are sync.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def new_context(browser, live_server):
    """`new_context(user, **options)`: a browser context, signed in as `user` if given."""
    contexts = []

    def make(user=None, **options):
        context = browser.new_context(base_url=live_server.url, **options)
        context.set_default_timeout(10_000)
        if user is not None:
            session = client_for(user).cookies["sessionid"].value
            context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()
