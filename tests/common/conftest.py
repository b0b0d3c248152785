"""Fixtures of the tests of the shared API plumbing: the annotation tests' project and corpus
(the personas are in tests/conftest.py)."""

from tests.annotation.conftest import corpus, project

__all__ = ["corpus", "project"]
