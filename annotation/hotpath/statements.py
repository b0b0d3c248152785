"""The annotator's requests on PostgreSQL, one statement each (see `annotation.hotpath`): the
lease here, and the parts every kind's submission statement shares (the statements themselves
are beside the rules they mirror, in `annotation.kinds`).

Every value is a query parameter; the statuses are the models' choices, written into the text
once (as constants, so that the planner matches them to the partial indexes on `status`).
Tables are named as the models name them (tests/annotation/test_hotpath.py checks).

The caller is `%(user_id)s` (a session's user) or else the owner of the token `%(key)s` (stored
as its SHA-256, `accounts.models.token_digest`; an expired token names no one).
"""

import re

from annotation.models import Assignment, Project, TaskKind

_CHOICES = {
    "count": TaskKind.COUNT.value,
    "verify": TaskKind.VERIFY.value,
    "leased": Assignment.Status.LEASED.value,
    "submitted": Assignment.Status.SUBMITTED.value,
    "expired": Assignment.Status.EXPIRED.value,
    "active": Project.Status.ACTIVE.value,
    "archived": Project.Status.ARCHIVED.value,
}


def statement(text: str) -> str:
    """The statement on one line with single spaces, the models' choices written in: laid out
    for reading here, sent (and hashed, and kept by the server) a third shorter. Spaces around
    `( ) , =` go too; no literal in these statements holds a space, a line break or one of those
    characters, so nothing else changes."""
    one_line = " ".join(text.format(**_CHOICES).split())
    return re.sub(r"\s*([(),=])\s*", r"\1", one_line)


_CALLER = """
    caller AS (
        SELECT u.id AS user_id, u.is_active
        FROM auth_user u
        WHERE u.id = COALESCE(
            %(user_id)s::bigint,
            (SELECT k.user_id FROM accounts_apitoken k
             WHERE k.digest = encode(sha256(convert_to(%(key)s::varchar, 'UTF8')), 'hex')
               AND k.expires_at > now())
        )
    )"""

# Caller, membership and, in the plain case, a live lease the caller does not hold already or a
# new one. The plain case: active user and project, member not flagged, lease reclaim not due,
# no gold check drawn, a task ahead of the caller's mark; otherwise nothing is leased and the
# view hands over to `scheduler.task_lease_next` (as it does when the caller is at the lease
# cap). Which kind: a verification task of the served version (`verification_version`) when the
# project serves them and `kind_draw` falls in its verification share (`verify`: the manager's
# fixed share, or else the one the version's values chose, `Project.verification_share_served`),
# else a count task; each kind has its own mark and its own partial index, and the scan of the
# kind not drawn is skipped (a one-time filter). A verification draw with none left ahead of the
# caller (a round used up before the next version brings another) leases a count task instead;
# verification tasks behind the mark (reopened by an expired lease) are left to the scheduler.
# Parameters: user_id, key, project, holding (assignment ids the client holds), max_leases, now,
# gold_draw, kind_draw, reclaim_due_before.
#
# Which task: the first open one (by id: the id order is the priority, as a model version's round is
# inserted in serving order, `annotation.services.rounds`) after the last training task the caller
# leased in the project (`mark`: one backward step in `assignment_annotator_idx`). Starting at the
# caller's own mark keeps a lease to a handful of rows however far the project has got; the tasks
# behind the mark (a region reopened by an expired lease or a flagged annotator, a round's end) are
# rare and left to the scheduler. "Never the same region twice to one annotator": one probe of
# `assignment_unique` (task, annotator) per candidate; its LIMIT keeps PostgreSQL from planning the
# test as an anti-join over all the caller's assignments.
#
# One annotator's requests at once (a phone resending "next"): the statement reads its snapshot
# before it can wait for another, so it may not see a lease committed meanwhile and would lease
# past the cap, or the same task twice. So `room` bumps the member's `lease_serial` (concurrent
# bumps queue on the row, and each sees the last committed value) and the statement leases only
# when the bump found the value of its own snapshot (`fresh`); otherwise it leases nothing and
# the scheduler, which takes the same row first, decides afresh.
#
# A new lease is committed like any write, after the WAL flush. (It was not, once: "losing one in
# a crash is harmless, the annotator asks again". But a phone holds its leases ahead and answers
# them offline; a lease lost in a crash made its answer a 404, and the phone dropped it.
# benchmark_faults: 5 answers refused after 2 PostgreSQL crashes in a minute.)
_LEASE = """
    member AS (
        SELECT c.user_id, c.is_active, m.id AS membership_id, m.lease_serial,
               p.id AS project_id, p.updated_at AS project_updated_at, p.lease_seconds,
               p.private, p.mechanism, p.alpha,
               c.is_active AND NOT m.flagged AND p.status = '{active}'
               AND p.leases_reclaimed_at >= %(reclaim_due_before)s::timestamptz
               AND %(gold_draw)s::double precision >= p.gold_fraction AS plain,
               COALESCE(p.verification_version IS NOT NULL AND NOT p.private
                        AND %(kind_draw)s::double precision
                            < COALESCE(p.verification_share, p.verification_share_auto),
                        false) AS verify,
               p.verification_version
        FROM caller c
        LEFT JOIN annotation_membership m
            ON m.user_id = c.user_id AND m.project_id = <project>
        LEFT JOIN annotation_project p ON p.id = m.project_id
    ),
    go AS (
        SELECT user_id, project_id, lease_seconds, membership_id, lease_serial, verify,
               verification_version
        FROM member WHERE plain<go_also>
    ),
    held AS (
        SELECT a.id, a.task_id, a.expires_at, a.id = ANY(%(holding)s::bigint[]) AS named
        FROM annotation_assignment a
        WHERE a.annotator_id = (SELECT user_id FROM go)
          AND a.project_id = (SELECT project_id FROM go)
          AND a.status = '{leased}' AND a.expires_at > %(now)s::timestamptz<held_also>
    ),
    live AS (
        SELECT id, task_id, expires_at FROM held WHERE NOT named ORDER BY id LIMIT 1
    ),
    room AS (
        UPDATE annotation_membership m SET lease_serial = m.lease_serial + 1
        FROM go
        WHERE m.id = go.membership_id
          AND NOT EXISTS (SELECT 1 FROM live)
          AND (SELECT count(*) FROM held) < %(max_leases)s::integer
        RETURNING m.lease_serial = go.lease_serial + 1 AS fresh
    ),
    verify_mark AS (
        SELECT a.task_id
        FROM annotation_assignment a JOIN annotation_task g ON g.id = a.task_id
        WHERE a.annotator_id = (SELECT user_id FROM go)
          AND a.project_id = <project> AND NOT g.is_gold AND g.kind = '{verify}'
          AND (SELECT verify FROM go)
        ORDER BY a.task_id DESC LIMIT 1
    ),
    verified AS (
        SELECT t.id
        FROM annotation_task t
        WHERE t.project_id = <project> AND t.open_slots > 0 AND t.kind = '{verify}'
          AND t.model_version = (SELECT verification_version FROM go) AND NOT t.is_gold
          AND (SELECT 1 FROM annotation_assignment a
               WHERE a.task_id = t.id AND a.annotator_id = (SELECT user_id FROM go)
               LIMIT 1) IS NULL
          AND t.id > COALESCE((SELECT task_id FROM verify_mark), 0)
          AND (SELECT verify FROM go)
          AND (SELECT fresh FROM room)
        ORDER BY t.id LIMIT 1
        FOR UPDATE OF t SKIP LOCKED
    ),
    mark AS (
        SELECT a.task_id
        FROM annotation_assignment a JOIN annotation_task g ON g.id = a.task_id
        WHERE a.annotator_id = (SELECT user_id FROM go)
          AND a.project_id = <project> AND NOT g.is_gold AND g.kind = '{count}'
          AND (NOT (SELECT verify FROM go) OR NOT EXISTS (SELECT 1 FROM verified))
        ORDER BY a.task_id DESC LIMIT 1
    ),
    counted AS (
        SELECT t.id
        FROM annotation_task t
        WHERE t.project_id = <project> AND t.open_slots > 0 AND NOT t.is_gold
          AND t.kind = '{count}'
          AND (SELECT 1 FROM annotation_assignment a
               WHERE a.task_id = t.id AND a.annotator_id = (SELECT user_id FROM go)
               LIMIT 1) IS NULL
          AND t.id > COALESCE((SELECT task_id FROM mark), 0)
          AND (NOT (SELECT verify FROM go) OR NOT EXISTS (SELECT 1 FROM verified))
          AND (SELECT fresh FROM room)
        ORDER BY t.id LIMIT 1
        FOR UPDATE OF t SKIP LOCKED
    ),
    picked AS (
        SELECT id FROM verified UNION ALL SELECT id FROM counted
    ),
    taken AS (
        UPDATE annotation_task t SET open_slots = t.open_slots - 1
        FROM picked WHERE t.id = picked.id
        RETURNING t.id
    ),
    leased AS (
        INSERT INTO annotation_assignment
            (project_id, task_id, annotator_id, status, leased_at, expires_at, submitted_at)
        SELECT go.project_id, taken.id, go.user_id, '{leased}', %(now)s::timestamptz,
               %(now)s::timestamptz + make_interval(secs => go.lease_seconds), NULL
        FROM taken
        CROSS JOIN go
        RETURNING id, task_id, expires_at
    )
"""
# The caller's membership and the lease: the columns of `rows.NextTaskRow`, by expression and
# name (`submission_and_lease` adds them to a submission's row, named `next_...`).
LEASE_COLUMNS = (
    ("mb.user_id", "user_id"),
    ("mb.is_active", "is_active"),
    ("mb.membership_id", "membership_id"),
    ("mb.project_updated_at", "project_updated_at"),
    ("mb.private", "private"),
    ("mb.mechanism", "mechanism"),
    ("mb.alpha", "alpha"),
    ("x.id", "assignment_id"),
    ("x.expires_at", "expires_at"),
    ("t.id", "task_id"),
    ("t.sentence_id", "sentence_id"),
    ("t.start", "start"),
    ("t.length", "length"),
    ("t.tags", "tags"),
    ("t.is_gold", "is_gold"),
    ("s.tokens", "tokens"),
    ("s.multiword", "multiword"),
    ("t.kind", "kind"),
    ("t.shown_tags", "shown_tags"),
    ("t.model_version", "model_version"),
)


def _lease_columns(prefix: str = "") -> str:
    return ", ".join(f"{expression} AS {prefix}{name}" for expression, name in LEASE_COLUMNS)


_LEASE_FROM = """
FROM member mb
LEFT JOIN (
    (SELECT * FROM leased UNION ALL SELECT * FROM live) x
    JOIN annotation_task t ON t.id = x.task_id
    JOIN annotation_sentence s ON s.id = t.sentence_id
) ON true
"""


def _lease(*, project: str, go_also: str = "", held_also: str = "") -> str:
    """The lease's CTEs in the project `project` (an SQL expression), leasing only when
    `go_also` holds too, and not counting the caller's leases `held_also` excludes."""
    return (
        _LEASE.replace("<project>", project)
        .replace("<go_also>", go_also)
        .replace("<held_also>", held_also)
    )


NEXT_TASK = statement(
    "WITH"  # noqa: S608 (constant text: the caller CTE and the models' choices)
    + _CALLER
    + ","
    + _lease(project="%(project)s::bigint")
    + "SELECT "
    + _lease_columns()
    + _LEASE_FROM
)

# Shared by both submissions: who sends, their lease, its task and project, membership and
# whether the idempotency key was used already (`ctx`); then the lease marked answered once the
# statement's `valid` row exists (`answered`).
#
# The project's row is read under FOR KEY SHARE (`locked_project`), the lock the observation's
# foreign key takes anyway, but taken before the checks: a manager's switch to private (or
# archiving) holds the row FOR UPDATE until it commits, and this statement then waits and checks
# the answer against the row as the switch left it. Read from the statement's snapshot instead,
# an answer racing the switch was stored as a true count in a project that had just become
# private (issue 24: 6 of 15 tries). The other way round, the switch waits for the answer and
# then sees it (`project_update` refuses to change privacy once there are answers).
_SUBMISSION_CONTEXT = """
    locked_project AS MATERIALIZED (
        SELECT p.id, p.status, p.updated_at, p.private, p.mechanism, p.alpha
        FROM annotation_project p
        WHERE p.id = (SELECT a.project_id FROM annotation_assignment a
                      WHERE a.id = %(assignment)s::bigint)
        FOR KEY SHARE
    ),
    ctx AS (
        SELECT c.user_id, c.is_active, a.annotator_id = c.user_id AS mine, a.status,
               p.id AS project_id, p.status AS project_status,
               p.updated_at AS project_updated_at,
               p.private, p.mechanism AS project_mechanism, p.alpha AS project_alpha,
               t.sentence_id, t.start, t.length, t.tags, t.is_gold, t.kind, t.shown_tags,
               t.model_version,
               EXISTS (SELECT 1 FROM annotation_membership m
                       WHERE m.project_id = a.project_id AND m.user_id = c.user_id) AS is_member,
               EXISTS (SELECT 1 FROM annotation_observation o
                       WHERE o.annotator_id = c.user_id
                         AND o.idempotency_key = %(idempotency_key)s::varchar) AS key_used
        FROM caller c
        LEFT JOIN (
            annotation_assignment a
            JOIN annotation_task t ON t.id = a.task_id
            JOIN locked_project p ON p.id = a.project_id
        ) ON a.id = %(assignment)s::bigint
    ),
"""
ANSWERED = """
    answered AS (
        UPDATE annotation_assignment a
        SET status = '{submitted}', submitted_at = %(now)s::timestamptz
        FROM valid
        WHERE a.id = %(assignment)s::bigint AND a.status IN ('{leased}', '{expired}')
        RETURNING a.id
    ),
"""

# Every kind's submission statement begins alike: the caller, then the submission's context;
# each then checks the answer (`valid`), marks the lease answered (`ANSWERED`) and stores it
# (annotation.kinds).
SUBMISSION_HEAD = (
    "WITH"  # noqa: S608 (constant text: the caller CTE and the models' choices)
    + _CALLER
    + """,
"""
    + _SUBMISSION_CONTEXT
)


def submission_and_lease(submission: str, answer_row: str) -> str:
    """A kind's submission statement that also leases the caller's next task in the answer's
    project, as `NEXT_TASK` would right after it: the phone's "my answer, and the next one" in
    one statement and one commit. `submission`: the kind's CTEs after `SUBMISSION_HEAD`, the
    last `stored`; `answer_row`: its final SELECT. Its row is the answer's columns, then the
    lease's, named `next_...`.

    The lease runs only when the answer was stored (the service says why it was not, and the
    next task is then asked for on its own). All the CTEs read one snapshot, in which the lease
    just answered is still `leased`: it is left out of the caller's leases, as the answer marks
    it answered. Nothing else the answer writes is read by the lease (tests/annotation/
    test_hotpath.py runs both ways on the same cases)."""
    return statement(
        SUBMISSION_HEAD  # noqa: S608 (constant text)
        + submission
        + ",\n    answer_row AS ("
        + answer_row
        + "),"
        + _lease(
            project="(SELECT project_id FROM ctx)",
            go_also=" AND EXISTS (SELECT 1 FROM stored)",
            held_also=" AND a.id <> %(assignment)s::bigint",
        )
        + "SELECT ar.*, "
        + _lease_columns(prefix="next_")
        + _LEASE_FROM.replace("FROM member mb", "FROM answer_row ar CROSS JOIN member mb")
    )
