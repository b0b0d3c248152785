"""The environment for the platform processes that tests start (manage.py, gunicorn, celery).

Those processes must see the environment a user would give them, not the test run's: no test
database or Redis URLs, and none of the flags a test fixture sets for itself (Playwright needs
DJANGO_ALLOW_ASYNC_UNSAFE in the test process; a deploy check must never see it).
"""

import os

TEST_RUN_VARIABLES = {
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
    "DJANGO_SETTINGS_MODULE",
    "TALLY_REQUIRE_SERVICES",
    "TALLY_DB_TESTS_ONLY",
}


def child_env(**variables: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in TEST_RUN_VARIABLES}
    env.update(variables)
    return env
