"""Domain errors of the learning app (see `common.exceptions`)."""

from common.exceptions import Conflict, NotFound


class NoModel(NotFound):
    """A report or model file was asked for, but the project has no model yet (404)."""

    code = "no_model"


class NoModelYet(Conflict):
    """An action needs a model (predictions), and the project has none yet (409)."""

    code = "no_model"
