"""Fixtures of the annotation tests: a project with a small gold-tagged corpus (the personas
are in tests/conftest.py)."""

import io

import pytest

from annotation import services
from tests.support.factories import jsonl, make_project


@pytest.fixture
def project(manager):
    return make_project(owner=manager)


@pytest.fixture
def corpus(project, manager):
    return services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(jsonl()),
        filename="c.jsonl",
        format="jsonl",
        max_bytes=10**6,
        seed=1,
    )
