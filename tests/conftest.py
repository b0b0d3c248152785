"""Shared test configuration.

Markers `postgres`, `redis` and `browser` name the real services a test needs. Locally a test whose
service is missing is skipped with the reason; with TALLY_REQUIRE_SERVICES=1 (CI's full mode) it
fails instead, so a missing service can never pass CI silently.
"""

import os
import shutil

import pytest
from django.db import connection

REQUIRE_SERVICES = os.environ.get("TALLY_REQUIRE_SERVICES") == "1"
DB_TESTS_ONLY = os.environ.get("TALLY_DB_TESTS_ONLY") == "1"
_DB_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
}


def _missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}", pytrace=False)
    pytest.skip(reason)


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
        _missing("needs PostgreSQL: set DATABASE_URL=postgres://...")
    if item.get_closest_marker("redis") and not _redis_reachable():
        _missing("needs Redis: set REDIS_URL=redis://... to a running server")
    if item.get_closest_marker("browser") and not shutil.which("chromium"):
        _missing("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")


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
