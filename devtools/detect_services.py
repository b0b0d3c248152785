"""Find PostgreSQL on its default port for `./tally test`, when the environment names none:
prints the shell `export` line that points the tests at it. (Redis is not looked for: a run gets
a redis-server of its own, devtools/own_redis.py.)

    eval "$(python -m devtools.detect_services)"

A server that is not there (or refuses us) is left unset, and the tests that need it are
skipped with a note at the end of the run saying how to run them (tests/conftest.py).
"""

from __future__ import annotations

import os
import shlex
import sys

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/tally"


def postgres_answers(url: str) -> bool:
    import psycopg

    # The server's own database: the test database is made by the tests.
    base = url.rsplit("/", 1)[0] + "/postgres"
    try:
        with psycopg.connect(base, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def detected(environ: dict[str, str]) -> dict[str, str]:
    """The variables to set: those the environment lacks and whose service answers."""
    found = {}
    if not environ.get("DATABASE_URL"):
        url = environ.get("TALLY_TEST_DATABASE_URL") or DEFAULT_DATABASE_URL
        if postgres_answers(url):
            found["DATABASE_URL"] = url
    return found


def main() -> int:
    for name, value in detected(dict(os.environ)).items():
        print(f"export {name}={shlex.quote(value)}")
        print(f"tally: {name} unset, found {value}: the tests that need it run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
