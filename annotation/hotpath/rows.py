"""What the hot path's statements answer: one named row each (columns by name, see
`annotation.hotpath.statements`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from annotation.scheduler import Lease


@dataclass(frozen=True, slots=True)
class NextTaskRow:
    """The caller (absent when the token is unknown), their membership of the project (None
    when they are not a member) with the project's privacy settings and, when the statement
    leased or handed back a task, the lease (its columns None otherwise)."""

    user_id: int
    is_active: bool
    membership_id: int | None
    project_updated_at: datetime | None
    private: bool | None
    mechanism: str | None
    alpha: float | None
    assignment_id: int | None
    expires_at: datetime | None
    task_id: int | None
    sentence_id: int | None
    start: int | None
    length: int | None
    tags: list[int] | None
    is_gold: bool | None
    tokens: list[str] | None
    multiword: list | None
    kind: str | None
    shown_tags: list[int] | None
    model_version: int | None

    def lease(self) -> Lease | None:
        """The lease in this row (its columns carry `Lease`'s names), if there is one."""
        if self.assignment_id is None:
            return None
        return Lease(**{field.name: getattr(self, field.name) for field in fields(Lease)})


@dataclass(frozen=True, slots=True)
class SubmitRow:
    """The caller (absent when the token is unknown), the project of the assignment (None when
    there is no such assignment) and, when the statement stored the answer, the observation as
    stored (`id` and the rest None otherwise). Its attributes are those `observation_out` reads
    of an `Observation`."""

    user_id: int
    is_active: bool
    project_id: int | None
    project_updated_at: datetime | None
    id: int | None
    assignment_id: int | None
    tags: list[int] | None
    counts: list[int] | None
    seconds_on_device: float | None
    idempotency_key: str | None
    submitted_at: datetime | None
    mechanism: str | None
    alpha: float | None


@dataclass(frozen=True, slots=True)
class VerificationSubmitRow:
    """As `SubmitRow`, for a verification answer (`statements.SUBMIT_VERIFICATION`): the
    observation as stored has the attributes `observation_out` reads of a verification answer."""

    user_id: int
    is_active: bool
    project_id: int | None
    project_updated_at: datetime | None
    id: int | None
    assignment_id: int | None
    kind: str | None
    shown_tags: list[int] | None
    model_version: int | None
    answer: bool | None
    wrong: int | None
    seconds_on_device: float | None
    idempotency_key: str | None
    submitted_at: datetime | None
