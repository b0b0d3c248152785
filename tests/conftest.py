"""Shared test configuration, and the personas every API and page is tried by.

Personas: the project's `manager`, an `annotator` of the project, an `outsider` (an annotator of
another project) and an anonymous visitor; `personas` maps those names to clients. Each test
package defines its own `project`; the frontend's pages send the personas' requests with a
session (`persona_client`), the APIs with a token.

Markers `postgres`, `redis`, `nginx` and `browser` name the real services a test needs. Locally a
test whose service is missing is skipped with the reason; with TALLY_REQUIRE_SERVICES=1 (CI's full
mode) it fails instead, so a missing service can never pass CI silently.
"""

import os
import shutil

import pytest
from django.core.cache import cache
from django.db import connection

from config.celery import app as celery_app
from delivery import push, stream_slots
from learning.adapter import model_load
from tests.support.factories import UserFactory, client_for, make_project, member

REQUIRE_SERVICES = os.environ.get("TALLY_REQUIRE_SERVICES") == "1"
DB_TESTS_ONLY = os.environ.get("TALLY_DB_TESTS_ONLY") == "1"
_DB_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


_SKIPPED_FOR: dict[str, int] = {}  # service -> tests skipped for want of it


def _missing(reason: str, service: str = "") -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}", pytrace=False)
    if service:
        _SKIPPED_FOR[service] = _SKIPPED_FOR.get(service, 0) + 1
    pytest.skip(reason)


_HOW_TO_RUN = {
    "PostgreSQL": "start PostgreSQL on 127.0.0.1:5432 (./tally test finds it) or set "
    "DATABASE_URL=postgres://user@host:5432/tally",
    "Redis": "start Redis on 127.0.0.1:6379 (./tally test finds it) or set "
    "REDIS_URL=redis://host:6379/15",
    "nginx": "apt-get install nginx",
    "Chromium": "apt-get install chromium",
}


def pytest_terminal_summary(terminalreporter) -> None:
    """Say how to run the tests that were skipped for want of a service (issue 17)."""
    for service, n in sorted(_SKIPPED_FOR.items()):
        terminalreporter.write_line(
            f"{n} test{'s' * (n != 1)} skipped for want of {service}: to run them, "
            f"{_HOW_TO_RUN[service]} (./tally test --full requires every service)."
        )


def _redis_reachable() -> bool:
    import redis

    url = os.environ.get("REDIS_URL")
    if not url:
        return False
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("postgres") and connection.vendor != "postgresql":
        _missing("needs PostgreSQL: set DATABASE_URL=postgres://...", "PostgreSQL")
    if item.get_closest_marker("redis") and not _redis_reachable():
        _missing("needs Redis: set REDIS_URL=redis://... to a running server", "Redis")
    if item.get_closest_marker("nginx") and not (
        shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")
    ):
        _missing("needs nginx, the production proxy (apt-get install nginx)", "nginx")
    if item.get_closest_marker("browser") and not shutil.which("chromium"):
        _missing(
            "needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)", "Chromium"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The second CI pass re-runs only the database tests, on SQLite.
    if not DB_TESTS_ONLY:
        return
    selected, deselected = [], []
    for item in items:
        uses_db = item.get_closest_marker("django_db") or _DB_FIXTURES & set(
            getattr(item, "fixturenames", ())
        )
        (selected if uses_db else deselected).append(item)
    config.hook.pytest_deselected(items=deselected)
    items[:] = selected


@pytest.fixture(autouse=True)
def _isolated(settings, tmp_path):
    """Fast password hashing; a cache of this process only (sign-in rate limits are counted in
    it, and the file cache in var/ is shared with whatever else runs on the machine); model
    files in a directory of the test's own."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "t"}
    }
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()
    # Per-process state keyed by names and ids that repeat across tests: SQLite reuses ids
    # after each test's rollback, so a model file name (project id, version, lock owner) or a
    # user id can come back with another test's model cached or stream slots held.
    model_load.cache_clear()
    stream_slots._local.clear()
    push._report_memo.clear()
    yield
    cache.clear()


@pytest.fixture
def manager(db):
    return UserFactory(username="manager")


@pytest.fixture
def annotator(project):
    return member(project, username="annotator")


@pytest.fixture
def other_project(db):
    return make_project(owner=UserFactory(username="other_manager"), name="Other")


@pytest.fixture
def outsider(other_project):
    """An annotator of another project."""
    return member(other_project, username="outsider")


@pytest.fixture
def persona_client():
    """How a persona's requests are sent: `persona_client(user or None)` → a test client."""
    return client_for


@pytest.fixture
def personas(manager, annotator, outsider, persona_client):
    return {
        "manager": persona_client(manager),
        "annotator": persona_client(annotator),
        "outsider": persona_client(outsider),
        "anonymous": persona_client(None),
    }


@pytest.fixture
def eager(settings):
    """Celery tasks run at once in this process; webhook retries without waiting."""
    settings.TALLY_WEBHOOK_BACKOFF_SECONDS = 0
    celery_app.conf.update(CELERY_TASK_ALWAYS_EAGER=True)
    yield
    celery_app.conf.update(CELERY_TASK_ALWAYS_EAGER=False)
