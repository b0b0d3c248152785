"""The delivery tests use the learning tests' toy project and crowd (a retrain makes the reports
they deliver)."""

from tests.learning.conftest import crowd, project  # noqa: F401 (fixtures)
