"""The environment for the platform processes that tests start (manage.py, gunicorn, celery).

Those processes must see the environment a user would give them, not the test run's: no test
database or Redis URLs, and none of the flags a test fixture sets for itself (Playwright needs
DJANGO_ALLOW_ASYNC_UNSAFE in the test process; a deploy check must never see it). The rule is
`devtools.stack.child_env`, which the benchmarks' stacks use too.
"""

from devtools.stack import child_env

__all__ = ["child_env"]
