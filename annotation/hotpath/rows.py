"""What the lease statement answers: one named row (columns by name, see
`annotation.hotpath.statements`; each task kind's submission row is in its module,
`annotation.kinds`)."""

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
    kind: str | None
    shown_tags: list[int] | None
    model_version: int | None

    def lease(self) -> Lease | None:
        """The lease in this row (its columns carry `Lease`'s names), if there is one."""
        if self.assignment_id is None:
            return None
        return Lease(**{field.name: getattr(self, field.name) for field in fields(Lease)})
