"""Fixtures of the learning tests: a small gold-tagged project of the toy language (60 training
and 20 evaluation sentences, see `tests.support.crowd`) a crowd of four annotators, the
first of them the `annotator` persona (the personas are in tests/conftest.py), and the project
`trained` by them."""

import pytest

from tests.support import learning
from tests.support.crowd import add_annotators, toy_project


@pytest.fixture
def project(manager):
    return toy_project(manager)


@pytest.fixture
def crowd(project, annotator):
    return [annotator, *add_annotators(project, 3)]


@pytest.fixture
def trained(project, crowd):
    """The project after 80 exact answers by the crowd and one retrain."""
    return learning.trained(project, crowd)
