"""Find PostgreSQL and Redis on their default ports for `./tally test`, when the environment
names neither: prints the shell `export` lines that point the tests at them.

    eval "$(python -m devtools.detect_services)"

A service that is not there (or refuses us) is left unset, and the tests that need it are
skipped with a note at the end of the run saying how to run them (tests/conftest.py).
"""

from __future__ import annotations

import os
import shlex
import sys

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/tally"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"


def postgres_answers(url: str) -> bool:
    import psycopg

    # The server's own database: the test database is made by the tests.
    base = url.rsplit("/", 1)[0] + "/postgres"
    try:
        with psycopg.connect(base, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def detected(environ: dict[str, str]) -> dict[str, str]:
    """The variables to set: those the environment lacks and whose service answers."""
    found = {}
    if not environ.get("DATABASE_URL"):
        url = environ.get("TALLY_TEST_DATABASE_URL") or DEFAULT_DATABASE_URL
        if postgres_answers(url):
            found["DATABASE_URL"] = url
    if not environ.get("REDIS_URL"):
        url = environ.get("TALLY_TEST_REDIS_URL") or DEFAULT_REDIS_URL
        if redis_answers(url):
            found["REDIS_URL"] = url
    return found


def main() -> int:
    for name, value in detected(dict(os.environ)).items():
        print(f"export {name}={shlex.quote(value)}")
        print(f"tally: {name} unset, found {value}: the tests that need it run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
