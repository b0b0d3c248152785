"""Domain errors raised by services, selectors and the scheduler.

They carry a stable `code` (the API's error code) and no HTTP knowledge; `annotation.api.errors`
maps them to responses.
"""


class AnnotationError(Exception):
    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields


class InvalidInput(AnnotationError):
    code = "invalid"


class NotFound(AnnotationError):
    code = "not_found"


class LeaseNotYours(NotFound):
    """The assignment does not exist or is not the caller's (the API cannot tell which)."""

    code = "lease_not_yours"


class Conflict(AnnotationError):
    code = "conflict"


class ProjectNotActive(Conflict):
    code = "project_not_active"


class LeaseLimit(Conflict):
    """The caller already holds as many live leases in the project as one annotator may."""

    code = "lease_limit"


class InvalidCorpus(AnnotationError):
    code = "invalid_corpus"

    def __init__(self, message: str, *, line_number: int) -> None:
        super().__init__(message)
        self.line_number = line_number


class PayloadTooLarge(AnnotationError):
    code = "payload_too_large"
