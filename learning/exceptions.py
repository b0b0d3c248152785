"""Domain errors of the learning app (see `common.exceptions`)."""

from common.exceptions import NotFound


class NoModel(NotFound):
    """The project has no model version yet (or, for a download, the version's file is gone):
    no report, no model file, no prediction."""

    code = "no_model"
