"""Fixtures of the learning tests: a small gold-tagged project of the toy language (60 training
and 20 evaluation sentences, see `tests.support.crowd`) and a crowd of four annotators, the
first of them the `annotator` persona (the personas are in tests/conftest.py)."""

import pytest

from tests.support.crowd import add_annotators, import_corpus, toy_sentences
from tests.support.factories import make_project


@pytest.fixture
def project(manager):
    project = make_project(
        owner=manager, name="Toy", window_size=3, redundancy=3, tags_per_task=None
    )
    import_corpus(project, manager, toy_sentences(80))
    return project


@pytest.fixture
def crowd(project, annotator):
    return [annotator, *add_annotators(project, 3)]
