"""Fixtures of the frontend tests: a small gold-tagged project, personas signed in with a session
(the personas themselves are in tests/conftest.py), a real Chromium.

The browser is Debian's Chromium driven by Playwright (downloading a browser does not work here).
"""

import os
import shutil

import pytest
from django.test import Client

from tests.support.factories import import_jsonl, jsonl, make_project

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


def pets_project(manager, **settings):
    """A project of `manager`'s (made with `settings`) holding SENTENCES."""
    project = make_project(owner=manager, **settings)
    import_jsonl(project, manager, jsonl(SENTENCES), filename="pets.jsonl", max_bytes=10**6, seed=3)
    return project


@pytest.fixture
def project(manager):
    return pets_project(manager, name="Pets & <b>things</b>", tags_per_task=2)


def session_client_for(user=None) -> Client:
    """A page client signed in as `user` with a session, as a browser is (the API's token
    client is `tests.support.factories.client_for`)."""
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def persona_client():
    return session_client_for


# --- Browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    """Chromium for one test module. Not for the whole session: Playwright's sync API keeps an
    event loop running in this thread while it is open, and tests after the browser tests that
    call asyncio.run() (tests/learning/test_events_asgi.py) would fail."""
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
def short_event_streams(settings):
    """Event streams end (and EventSource reconnects) sooner than in production, so that no
    stream outlives the test's database. Modules of live pages use it for every test:
    `pytest.mark.usefixtures("short_event_streams")`."""
    settings.TALLY_SSE_STREAM_SECONDS = 4
    settings.TALLY_SSE_POLL_SECONDS = 1


@pytest.fixture(scope="module")
def tokenizer_loaded():
    """spaCy's and Punkt's first load takes seconds (more on a busy machine): done before a page
    waits on it (a preview, "try the model"), in this process, where the live server's threads
    find it loaded."""
    from common.text import text_sentences

    list(text_sentences(["Warm. Up."], language="en"))


@pytest.fixture
def new_context(browser, live_server):
    """`new_context(user, **options)`: a browser context, signed in as `user` if given."""
    contexts = []

    def make(user=None, **options):
        context = browser.new_context(base_url=live_server.url, **options)
        context.set_default_timeout(10_000)
        if user is not None:
            session = session_client_for(user).cookies["sessionid"].value
            context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()
