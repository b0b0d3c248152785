"""Domain errors raised by the services, selectors and the scheduler of every app.

They carry a stable `code` (the API's error code) and no HTTP knowledge; `common.api.errors`
maps them to responses. An app adds its own by subclassing these (`learning.exceptions`).
"""


class DomainError(Exception):
    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields


class InvalidInput(DomainError):
    code = "invalid"


class NotFound(DomainError):
    code = "not_found"


class LeaseNotYours(NotFound):
    """The assignment does not exist or is not the caller's (the API cannot tell which)."""

    code = "lease_not_yours"


class NotAllowed(DomainError):
    """The caller may not do this (403), though they may see the object."""

    code = "permission_denied"


class Conflict(DomainError):
    code = "conflict"


class IdempotencyKeyReused(Conflict):
    """An idempotency key sent again with a different answer (or for another assignment): the
    stored answer stands, and the client must not believe the new one was taken."""

    code = "idempotency_key_reused"


class DuplicateCorpus(Conflict):
    """The file's content was imported into the project before; sent again only when asked."""

    code = "duplicate_corpus"


class ProjectNotActive(Conflict):
    code = "project_not_active"


class LeaseLimit(Conflict):
    """The caller already holds as many live leases in the project as one annotator may."""

    code = "lease_limit"


class AnsweredAsAnother(Conflict):
    """The answer says it was given on its device by another account than the caller's (an
    outbox filled by one annotator, sent by someone else's session): never stored as theirs."""

    code = "answered_as_another"


class ImportQueueFull(Conflict):
    """The project has `TALLY_IMPORT_JOBS_PER_PROJECT` import jobs queued or running already."""

    code = "import_queue_full"


class Throttled(DomainError):
    """The caller asked for more than their share (429): wait, or end something they hold."""

    code = "throttled"


class TooManyImports(Throttled):
    """The caller has `TALLY_IMPORT_JOBS_PER_USER` import jobs queued or running already."""

    code = "too_many_imports"


class InvalidCorpus(DomainError):
    code = "invalid_corpus"

    def __init__(self, message: str, *, line_number: int) -> None:
        super().__init__(message)
        self.line_number = line_number


class PayloadTooLarge(DomainError):
    code = "payload_too_large"


class NotAuthenticated(DomainError):
    """No credentials (401 with `WWW-Authenticate: Token`)."""

    code = "not_authenticated"


class AuthenticationFailed(NotAuthenticated):
    """Credentials that name no active user: an unknown token, a malformed header (401)."""

    code = "authentication_failed"
