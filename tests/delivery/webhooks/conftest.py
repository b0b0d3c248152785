"""Fixtures of the webhook tests: internal targets allowed, real local HTTP receivers."""

import pytest

from tests.support.receivers import start_receiver


@pytest.fixture
def allow_internal(settings):
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True


@pytest.fixture
def receiver():
    made = []

    def make(*args, **kwargs):
        made.append(start_receiver(*args, **kwargs))
        return made[-1]

    yield make
    for r in made:
        r.close()
