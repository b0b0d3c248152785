"""Fixtures of the annotation tests: a project with a small gold-tagged corpus (the personas
are in tests/conftest.py)."""

import pytest

from tests.support.factories import import_jsonl, make_project


@pytest.fixture
def project(manager):
    return make_project(owner=manager)


@pytest.fixture
def corpus(project, manager):
    return import_jsonl(project, manager, filename="c.jsonl", max_bytes=10**6, seed=1)
